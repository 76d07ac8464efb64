//! The KEM's behaviour: what issue 35 asks it to show.

use rand::rngs::StdRng;
use rand::SeedableRng;
use tlslab_bfe::{
    generate, generate_with_threads, Ciphertext, Error, Parameters, PublicKey, SecretKey,
};

/// A small filter, so that every test runs in seconds in a debug build: n = 64, p = 0.1
/// gives m = 307 key parts and k = 4 hash functions.
fn small() -> Parameters {
    Parameters::for_capacity(64, 0.1).unwrap()
}

fn keys(seed: u64) -> (PublicKey, SecretKey, StdRng) {
    let mut rng = StdRng::seed_from_u64(seed);
    let (public_key, secret_key) = generate(small(), &mut rng);
    (public_key, secret_key, rng)
}

#[test]
fn decapsulation_recovers_the_key() {
    let (public_key, secret_key, mut rng) = keys(1);
    for _ in 0..5 {
        let (key, ciphertext) = public_key.encapsulate(&mut rng);
        assert_eq!(secret_key.decapsulate(&ciphertext).unwrap(), key);
        // The CPA-only decapsulation opens the same ciphertext to the same key.
        assert_eq!(secret_key.decapsulate_cpa(&ciphertext).unwrap(), key);
        let (key, ciphertext) = public_key.encapsulate_cpa(&mut rng);
        assert_eq!(secret_key.decapsulate_cpa(&ciphertext).unwrap(), key);
    }
    // Two encapsulations share no key.
    let (first, _) = public_key.encapsulate(&mut rng);
    let (second, _) = public_key.encapsulate(&mut rng);
    assert_ne!(first, second);
}

#[test]
fn keys_and_ciphertexts_survive_their_encodings() {
    let (public_key, mut secret_key, mut rng) = keys(2);
    let (key, ciphertext) = public_key.encapsulate(&mut rng);
    let (replayed_key, replayed) = public_key.encapsulate(&mut rng);
    assert_eq!(secret_key.decapsulate(&replayed).unwrap(), replayed_key);
    secret_key.puncture(&replayed);

    let public_bytes = public_key.to_bytes();
    assert_eq!(PublicKey::from_bytes(&public_bytes).unwrap(), public_key);
    let secret_bytes = secret_key.to_bytes();
    let reloaded = SecretKey::from_bytes(&secret_bytes).unwrap();
    assert_eq!(reloaded.to_bytes(), secret_bytes);
    assert_eq!(reloaded.public_key(), &public_key);
    let wire = ciphertext.to_bytes();
    let received = Ciphertext::from_bytes(public_key.parameters(), &wire).unwrap();
    assert_eq!(received, ciphertext);
    assert_eq!(reloaded.decapsulate(&received).unwrap(), key);
    // The erasure is in the encoding too: the reloaded key cannot open the punctured one.
    assert_eq!(reloaded.decapsulate(&replayed), Err(Error::Punctured));
}

#[test]
fn key_generation_on_many_threads_makes_the_same_key_as_on_one() {
    let parameters = Parameters::new(37, 3).unwrap();
    let one = generate_with_threads(parameters, 1, &mut StdRng::seed_from_u64(3)).1;
    for threads in [2, 3, 64] {
        let many = generate_with_threads(parameters, threads, &mut StdRng::seed_from_u64(3)).1;
        assert_eq!(many.to_bytes(), one.to_bytes(), "{threads} threads");
    }
    assert_eq!(one.erased_parts(), 0);
}

#[test]
fn after_puncturing_that_ciphertext_fails_and_others_still_work() {
    let (public_key, mut secret_key, mut rng) = keys(4);
    let (key, ciphertext) = public_key.encapsulate(&mut rng);
    let others: Vec<_> = (0..10).map(|_| public_key.encapsulate(&mut rng)).collect();
    assert_eq!(secret_key.decapsulate(&ciphertext).unwrap(), key);
    let erased = secret_key.puncture(&ciphertext);
    assert!(erased >= 1);
    assert_eq!(secret_key.punctures(), 1);
    assert_eq!(secret_key.decapsulate(&ciphertext), Err(Error::Punctured));
    assert_eq!(
        secret_key.decapsulate_cpa(&ciphertext),
        Err(Error::Punctured)
    );
    // With 4 of 307 parts erased, another ciphertext fails with probability (4/307)⁴ ≈ 3e-8.
    for (other_key, other) in &others {
        assert_eq!(&secret_key.decapsulate(other).unwrap(), other_key);
    }
    // Puncturing twice erases nothing more.
    assert_eq!(secret_key.puncture(&ciphertext), 0);
}

#[test]
fn a_punctured_key_part_is_zero_in_memory() {
    let (public_key, mut secret_key, mut rng) = keys(5);
    let (_, ciphertext) = public_key.encapsulate(&mut rng);
    let mut indices = public_key.indices(&ciphertext);
    assert_eq!(indices.len(), 4);
    for &index in &indices {
        assert!(secret_key
            .stored_part(index)
            .unwrap()
            .iter()
            .any(|&byte| byte != 0));
        assert_eq!(secret_key.is_erased(index), Some(false));
    }
    secret_key.puncture(&ciphertext);
    for &index in &indices {
        assert_eq!(secret_key.stored_part(index).unwrap(), &[0u8; 48]);
        assert_eq!(secret_key.is_erased(index), Some(true));
    }
    indices.sort_unstable();
    indices.dedup();
    assert_eq!(secret_key.erased_parts(), indices.len());
    // And in the encoding: those parts' 48 bytes are zeros, the others are not.
    let bytes = secret_key.to_bytes();
    for index in 0..small().key_parts() {
        let start = tlslab_bfe::SECRET_KEY_HEADER + index as usize * 48;
        let zero = bytes[start..start + 48].iter().all(|&byte| byte == 0);
        assert_eq!(zero, indices.contains(&index), "key part {index}");
    }
    assert_eq!(secret_key.is_erased(small().key_parts()), None);
}

#[test]
fn key_and_ciphertext_sizes_match_the_formulas() {
    let (public_key, secret_key, mut rng) = keys(6);
    let parameters = small();
    let (m, k) = (307, 4);
    assert_eq!((parameters.key_parts(), parameters.hashes()), (m, k));
    let (_, ciphertext) = public_key.encapsulate(&mut rng);
    assert_eq!(public_key.to_bytes().len(), parameters.public_key_size());
    assert_eq!(parameters.public_key_size(), 10 + 96);
    assert_eq!(ciphertext.to_bytes().len(), parameters.ciphertext_size());
    assert_eq!(parameters.ciphertext_size(), 96 + 32 * k as usize);
    assert_eq!(secret_key.to_bytes().len(), parameters.secret_key_size());
    assert_eq!(parameters.secret_key_size(), 106 + 48 * m as usize);
    assert_eq!(secret_key.memory_bytes(), parameters.secret_key_memory());
    assert!(secret_key.memory_bytes() >= 48 * m as usize);
    assert!(secret_key.memory_bytes() <= 48 * m as usize + 512);
}

#[test]
fn the_false_positive_rate_matches_p_within_its_binomial_interval() {
    let (public_key, mut secret_key, mut rng) = keys(7);
    let parameters = small();
    // Fill the filter to its capacity n = 64.
    for _ in 0..64 {
        let (_, ciphertext) = public_key.encapsulate(&mut rng);
        secret_key.puncture(&ciphertext);
    }
    let trials = 600;
    let mut false_positives = 0;
    for _ in 0..trials {
        let (key, ciphertext) = public_key.encapsulate(&mut rng);
        match secret_key.decapsulate(&ciphertext) {
            Ok(opened) => assert_eq!(opened, key),
            Err(Error::Punctured) => false_positives += 1,
            Err(error) => panic!("a fresh ciphertext fails with {error}"),
        }
    }
    let measured = f64::from(false_positives) / f64::from(trials);
    // Given which parts are erased, a fresh ciphertext's k indices are uniform, so it fails
    // with probability exactly (erased / m)^k.
    let erased = secret_key.erased_parts() as f64 / f64::from(parameters.key_parts());
    let exact = erased.powi(i32::from(parameters.hashes()));
    let (low, high) = wilson_interval(false_positives, trials);
    println!(
        "false positives: {false_positives}/{trials} = {measured:.4}, 99.9% interval \
         [{low:.4}, {high:.4}]; exact for this key {exact:.4}; design p = 0.1, formula {:.4}",
        parameters.expected_false_positive_rate(64)
    );
    assert!(
        low <= exact && exact <= high,
        "the exact rate is in the interval"
    );
    assert!(low <= 0.1 && 0.1 <= high, "p = 0.1 is in the interval");
}

/// The Wilson score interval at 99.9% (z = 3.29) for `successes` of `trials`.
fn wilson_interval(successes: u32, trials: u32) -> (f64, f64) {
    let z: f64 = 3.290_527;
    let n = f64::from(trials);
    let share = f64::from(successes) / n;
    let centre = (share + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (share * (1.0 - share) / n + z * z / (4.0 * n * n)).sqrt();
    (centre - half, centre + half)
}

#[test]
fn a_wrong_or_mauled_ciphertext_is_rejected() {
    let (public_key, secret_key, mut rng) = keys(8);
    let parameters = small();
    let (key, ciphertext) = public_key.encapsulate(&mut rng);
    let wire = ciphertext.to_bytes();

    // One bit flipped in each of the k masked seeds: the one that opens it gives a wrong
    // seed, any other no longer matches the re-encryption.
    for j in 0..usize::from(parameters.hashes()) {
        let mut mauled = wire.clone();
        mauled[96 + 32 * j + 7] ^= 0x10;
        let mauled = Ciphertext::from_bytes(parameters, &mauled).unwrap();
        assert_eq!(
            secret_key.decapsulate(&mauled),
            Err(Error::Invalid),
            "seed {j}"
        );
        // The CPA-only variant does not notice: that is what the label means.
        if j == 0 {
            let opened = secret_key.decapsulate_cpa(&mauled).unwrap();
            assert_ne!(opened, key);
        }
    }
    // c1 of another ciphertext, a valid point: a different key part, a different check.
    let (_, other) = public_key.encapsulate(&mut rng);
    let mut spliced = other.to_bytes()[..96].to_vec();
    spliced.extend_from_slice(&wire[96..]);
    let spliced = Ciphertext::from_bytes(parameters, &spliced).unwrap();
    assert_eq!(secret_key.decapsulate(&spliced), Err(Error::Invalid));
    // A bit flipped in c1: no longer a point, or a point of another ciphertext.
    let mut flipped = wire.clone();
    flipped[50] ^= 0x01;
    match Ciphertext::from_bytes(parameters, &flipped) {
        Err(Error::Malformed { .. }) => {}
        Ok(flipped) => assert_eq!(secret_key.decapsulate(&flipped), Err(Error::Invalid)),
        Err(error) => panic!("{error}"),
    }
    // A ciphertext for another key of the same shape.
    let (stranger, _, _) = keys(9);
    let (_, foreign) = stranger.encapsulate(&mut rng);
    assert_eq!(secret_key.decapsulate(&foreign), Err(Error::Invalid));
    // Wrong lengths and the point at infinity.
    for length in [0, 95, 96, wire.len() - 1, wire.len() + 1] {
        let mut bytes = wire.clone();
        bytes.resize(length, 0);
        assert!(
            matches!(
                Ciphertext::from_bytes(parameters, &bytes),
                Err(Error::Length { .. })
            ),
            "{length} bytes"
        );
    }
    let mut infinity = wire.clone();
    infinity[..96].fill(0);
    infinity[0] = 0xc0;
    assert!(matches!(
        Ciphertext::from_bytes(parameters, &infinity),
        Err(Error::Malformed { .. })
    ));
    // A ciphertext of another shape cannot be read for this one.
    let wider = Parameters::new(parameters.key_parts(), parameters.hashes() + 1).unwrap();
    assert!(Ciphertext::from_bytes(wider, &wire).is_err());
    assert_eq!(secret_key.decapsulate(&ciphertext).unwrap(), key);
}

#[test]
fn key_decoders_reject_what_is_not_a_key() {
    let (public_key, secret_key, _) = keys(10);
    let public_bytes = public_key.to_bytes();
    let secret_bytes = secret_key.to_bytes();
    assert!(PublicKey::from_bytes(&secret_bytes).is_err());
    assert!(SecretKey::from_bytes(&public_bytes).is_err());
    for length in [0, 3, 9, 10, 105, 107] {
        let mut bytes = public_bytes.clone();
        bytes.resize(length, 0);
        assert!(PublicKey::from_bytes(&bytes).is_err(), "{length} bytes");
    }
    for length in [0, 10, 106, secret_bytes.len() - 1, secret_bytes.len() + 48] {
        let mut bytes = secret_bytes.clone();
        bytes.resize(length, 0);
        assert!(SecretKey::from_bytes(&bytes).is_err(), "{length} bytes");
    }
    // A huge m in the header is an error about the length, not an allocation.
    let mut huge = secret_bytes.clone();
    huge[4..8].copy_from_slice(&(1u32 << 30).to_be_bytes());
    assert!(matches!(
        SecretKey::from_bytes(&huge),
        Err(Error::Length { .. })
    ));
    // A corrupted key part is found when it is used, as an error.
    let mut rng = StdRng::seed_from_u64(11);
    let (_, ciphertext) = public_key.encapsulate(&mut rng);
    let first = public_key.indices(&ciphertext)[0] as usize;
    let mut corrupt = secret_bytes.clone();
    let start = tlslab_bfe::SECRET_KEY_HEADER + first * 48;
    corrupt[start + 20] ^= 0xff;
    let corrupt = SecretKey::from_bytes(&corrupt).unwrap();
    assert!(matches!(
        corrupt.decapsulate(&ciphertext),
        Err(Error::Malformed { .. })
    ));
}
