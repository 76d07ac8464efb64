//! The BFE decoders (crates/tlslab-bfe), which read what a client sends (a ciphertext) and
//! what a file holds (the keys), on any bytes: each decodes or is an error, never a panic;
//! what decodes encodes back to the same bytes; and a real ciphertext altered by the input
//! either fails to decode or fails decapsulation, unless its encoding is unchanged.

use std::sync::OnceLock;

use rand::rngs::StdRng;
use rand::SeedableRng;
use tlslab_bfe::{Ciphertext, Parameters, PublicKey, SecretKey};

/// One small key and one of its ciphertexts, made once per process from a fixed seed (so a
/// failing input fails again).
struct Fixture {
    secret_key: SecretKey,
    ciphertext: Vec<u8>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let mut rng = StdRng::seed_from_u64(35);
        let parameters = Parameters::new(24, 3).expect("a valid shape");
        let (public_key, secret_key) = tlslab_bfe::generate_with_threads(parameters, 1, &mut rng);
        let (_, ciphertext) = public_key.encapsulate(&mut rng);
        Fixture {
            secret_key,
            ciphertext: ciphertext.to_bytes(),
        }
    })
}

pub fn check(bytes: &[u8]) {
    if let Ok(public_key) = PublicKey::from_bytes(bytes) {
        assert_eq!(
            public_key.to_bytes(),
            bytes,
            "a public key re-encodes as read"
        );
    }
    if let Ok(secret_key) = SecretKey::from_bytes(bytes) {
        assert_eq!(
            secret_key.to_bytes().as_slice(),
            bytes,
            "a secret key re-encodes as read"
        );
        assert_eq!(
            secret_key.memory_bytes(),
            secret_key.parameters().secret_key_memory()
        );
        // Its key parts are checked only when used: a ciphertext of its shape, made of the
        // same bytes, exercises that path.
        let parameters = secret_key.parameters();
        if let Some(wire) = bytes.get(..parameters.ciphertext_size()) {
            if let Ok(ciphertext) = Ciphertext::from_bytes(parameters, wire) {
                let _ = secret_key.decapsulate(&ciphertext);
            }
        }
    }
    // A ciphertext for a k of the first byte's choosing, from the rest.
    if let Some((&hashes, rest)) = bytes.split_first() {
        if let Ok(parameters) = Parameters::new(1000, u16::from(hashes)) {
            if let Ok(ciphertext) = Ciphertext::from_bytes(parameters, rest) {
                assert_eq!(
                    ciphertext.to_bytes(),
                    rest,
                    "a ciphertext re-encodes as read"
                );
            }
        }
    }
    // The real ciphertext, its bytes XORed with the input's (cut or padded to its length).
    let fixture = fixture();
    let parameters = fixture.secret_key.parameters();
    let mut altered = fixture.ciphertext.clone();
    for (byte, change) in altered.iter_mut().zip(bytes) {
        *byte ^= change;
    }
    if bytes.len() > altered.len() {
        altered.extend_from_slice(&bytes[altered.len()..]);
    }
    if let Ok(ciphertext) = Ciphertext::from_bytes(parameters, &altered) {
        if fixture.secret_key.decapsulate(&ciphertext).is_ok() {
            assert_eq!(
                ciphertext.to_bytes(),
                fixture.ciphertext,
                "only the real ciphertext passes the Fujisaki-Okamoto check"
            );
        }
        let _ = fixture.secret_key.decapsulate_cpa(&ciphertext);
    }
}
