//! The `bfe` fuzz target's check (fuzz/checks/bfe.rs) on stable Rust: on trivial inputs, on
//! real encodings and their truncations, and on every input kept in fuzz/regressions/bfe/
//! (crates/tlslab's fuzz_regressions test does the same for the other targets; it does not
//! depend on this crate).

#[path = "../../../fuzz/checks/bfe.rs"]
mod check;

use rand::rngs::StdRng;
use rand::SeedableRng;
use tlslab_bfe::{generate_with_threads, Parameters};

#[test]
fn the_fuzz_check_passes_on_trivial_and_real_inputs() {
    for bytes in [
        &b""[..],
        b"\0",
        b"\xff\xff",
        b"BFEs",
        b"BFEp\0\0\0\x01\0\x01",
    ] {
        check::check(bytes);
    }
    let mut rng = StdRng::seed_from_u64(1);
    let parameters = Parameters::new(5, 2).unwrap();
    let (public_key, secret_key) = generate_with_threads(parameters, 1, &mut rng);
    let (_, ciphertext) = public_key.encapsulate(&mut rng);
    let mut wire = vec![2u8];
    wire.extend_from_slice(&ciphertext.to_bytes());
    for real in [public_key.to_bytes(), secret_key.to_bytes().to_vec(), wire] {
        for length in [real.len(), real.len() - 1, 10, 1] {
            check::check(&real[..length]);
        }
    }
    // The fixture's own ciphertext unchanged: zero bytes XORed in.
    check::check(&[0u8; 96 + 3 * 32]);
    // And the inputs that once made the target fail, once there are any.
    let regressions =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/bfe");
    for entry in std::fs::read_dir(regressions).into_iter().flatten() {
        let path = entry.expect("a readable directory entry").path();
        println!("{}", path.display());
        check::check(&std::fs::read(&path).expect("a readable regression input"));
    }
}
