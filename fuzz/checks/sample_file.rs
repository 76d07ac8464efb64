//! A sample file for `tlslab compare A B`, as any bytes: values or an error with a hint.

pub fn check(bytes: &[u8]) {
    for column in [None, Some("handshake")] {
        if let Ok(values) = tlslab_report::parse_samples(bytes, column, "fuzz") {
            assert!(values.len() >= 2 && values.iter().all(|value| value.is_finite()));
        }
    }
}
