//! Public-key pins (`--pin sha256//BASE64`, as curl's `--pinnedpubkey`): SHA-256 digests of
//! the SubjectPublicKeyInfo a server's certificate must carry. Parsed here, where every
//! value a user gives is checked; the clients compare them (tlslab-backend's `certificate`).

use base64::Engine as _;

use crate::dimension::InvalidValue;

/// Public-key pins: the server's key must hash to one of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Pins(pub Vec<[u8; 32]>);

impl Pins {
    /// `sha256//BASE64`, several separated by `;` (curl's syntax).
    pub fn parse(text: &str) -> Result<Pins, InvalidValue> {
        let mut pins = Vec::new();
        for pin in text.split(';').map(str::trim).filter(|pin| !pin.is_empty()) {
            let encoded = pin
                .strip_prefix("sha256//")
                .ok_or_else(|| InvalidValue::new(format!("'{pin}' is not sha256//BASE64")))?;
            let digest = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()
                .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
                .ok_or_else(|| {
                    InvalidValue::new(format!("'{pin}' is not the base64 of a 32-byte SHA-256"))
                })?;
            pins.push(digest);
        }
        if pins.is_empty() {
            return Err(InvalidValue::new("no pin given"));
        }
        Ok(Pins(pins))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_parse_as_curl_writes_them_and_reject_anything_else() {
        let digest = [7u8; 32];
        let encoded = base64::engine::general_purpose::STANDARD.encode(digest);
        let pins = Pins::parse(&format!("sha256//{encoded}; sha256//{encoded}")).unwrap();
        assert_eq!(pins.0, vec![digest, digest]);
        assert!(Pins::parse("md5//abc")
            .unwrap_err()
            .message
            .contains("sha256//"));
        assert!(Pins::parse("sha256//AAAA")
            .unwrap_err()
            .message
            .contains("32-byte"));
        assert!(Pins::parse("").is_err());
    }
}
