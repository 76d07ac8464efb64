//! The order a dimension's values are listed in, the same in the summary, `compare --by`, the
//! reports and the interaction chart: numbers (concurrency, RTT, loss, arrival rates) in
//! numeric order, so that 1, 20, 100 never read 1, 100, 20 as text would; anything else in the
//! order the Configs have them (the matrix's, as typed).

/// A dimension's value as a number, for ordering: `100`, `10ms`, `500/s`, `0.5%`, `1.3`.
fn number(level: &str) -> Option<f64> {
    let digits = ["ms", "/s", "%"]
        .iter()
        .find_map(|unit| level.strip_suffix(unit))
        .unwrap_or(level);
    digits.trim().parse::<f64>().ok().filter(|n| n.is_finite())
}

/// `levels` (distinct, in the Configs' order) in numeric order when every one is a number,
/// else as they are.
pub(crate) fn ordered(mut levels: Vec<String>) -> Vec<String> {
    if levels.iter().all(|level| number(level).is_some()) {
        // Stable: equal numbers written two ways (`10`, `10.0`) keep the Configs' order.
        levels.sort_by(|a, b| {
            number(a)
                .unwrap_or(0.0)
                .total_cmp(&number(b).unwrap_or(0.0))
        });
    }
    levels
}

/// The distinct values `values` yields, first seen first, then [`ordered`].
pub(crate) fn distinct_ordered(values: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut levels: Vec<String> = Vec::new();
    for value in values {
        if !levels.contains(&value) {
            levels.push(value);
        }
    }
    ordered(levels)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(levels: &[&str]) -> Vec<String> {
        levels.iter().map(|level| level.to_string()).collect()
    }

    #[test]
    fn numbers_go_in_numeric_order_and_words_as_given() {
        assert_eq!(
            ordered(strings(&["1", "100", "20"])),
            strings(&["1", "20", "100"])
        );
        assert_eq!(
            ordered(strings(&["80ms", "5ms", "20ms"])),
            strings(&["5ms", "20ms", "80ms"])
        );
        assert_eq!(
            ordered(strings(&["1000/s", "200/s", "2.5/s"])),
            strings(&["2.5/s", "200/s", "1000/s"])
        );
        assert_eq!(
            ordered(strings(&["1.3", "1.2", "quic"])),
            strings(&["1.3", "1.2", "quic"])
        );
        assert_eq!(
            ordered(strings(&["chacha20", "aes128gcm"])),
            strings(&["chacha20", "aes128gcm"])
        );
        // One word among numbers: no numeric order to give, the Configs' order stays.
        assert_eq!(
            ordered(strings(&["closed", "500/s", "50/s"])),
            strings(&["closed", "500/s", "50/s"])
        );
        assert_eq!(
            distinct_ordered(strings(&["100", "1", "100", "20", "1"])),
            strings(&["1", "20", "100"])
        );
    }
}
