//! Key logs (the `SSLKEYLOGFILE` format that tlslab, browsers, curl and OpenSSL write) and
//! TLS 1.3 record protection, to read the encrypted part of a handshake: the traffic secret
//! of each direction gives, through HKDF-Expand-Label, the key and IV of its AEAD
//! (RFC 8446, 7.1 and 7.3). The cryptography is RustCrypto's; only the label encoding and
//! the per-record nonce are written here, as RFC 8446 spells them.

use std::collections::HashMap;
use std::path::Path;

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm, Nonce};
use chacha20poly1305::ChaCha20Poly1305;
use hkdf::Hkdf;
use sha2::{Sha256, Sha384};

use crate::packets::CaptureError;

/// The TLS 1.3 secrets of one handshake, by the client random that names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    /// `CLIENT_EARLY_TRAFFIC_SECRET`: opens 0-RTT data.
    pub client_early: Option<Vec<u8>>,
    /// `CLIENT_HANDSHAKE_TRAFFIC_SECRET`: opens the client's encrypted handshake messages.
    pub client_handshake: Option<Vec<u8>>,
    /// `SERVER_HANDSHAKE_TRAFFIC_SECRET`: opens the server's flight after its ServerHello.
    pub server_handshake: Option<Vec<u8>>,
    /// `CLIENT_TRAFFIC_SECRET_0`: opens the client's first application data.
    pub client_traffic: Option<Vec<u8>>,
    /// `SERVER_TRAFFIC_SECRET_0`: opens the server's first application data and tickets.
    pub server_traffic: Option<Vec<u8>>,
}

/// Every handshake's secrets in a key log.
#[derive(Debug, Clone, Default)]
pub struct KeyLog {
    entries: HashMap<Vec<u8>, Secrets>,
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|index| u8::from_str_radix(text.get(index..index + 2)?, 16).ok())
        .collect()
}

impl KeyLog {
    /// Reads a key log file; lines it does not know (comments, TLS 1.2's `CLIENT_RANDOM`,
    /// exporter secrets) are passed over.
    pub fn read(path: &Path) -> Result<KeyLog, CaptureError> {
        let text = std::fs::read(path).map_err(|error| {
            CaptureError::new(
                format!("cannot read the key log {}", path.display()),
                "give --keylog a file in SSLKEYLOGFILE format (tlslab run --keylog, curl, browsers)",
            )
            .caused_by(error)
        })?;
        let log = KeyLog::parse(&String::from_utf8_lossy(&text));
        if log.entries.is_empty() {
            return Err(CaptureError::new(
                format!("{} holds no TLS 1.3 secrets", path.display()),
                "a key log has lines such as CLIENT_HANDSHAKE_TRAFFIC_SECRET <random> <secret>",
            ));
        }
        Ok(log)
    }

    /// Reads an SSLKEYLOGFILE text; lines it does not understand are skipped, as Wireshark does.
    pub fn parse(text: &str) -> KeyLog {
        let mut entries: HashMap<Vec<u8>, Secrets> = HashMap::new();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let (Some(label), Some(random), Some(secret)) =
                (words.next(), words.next(), words.next())
            else {
                continue;
            };
            let (Some(random), Some(secret)) = (hex(random), hex(secret)) else {
                continue;
            };
            let entry = entries.entry(random).or_default();
            let slot = match label {
                "CLIENT_EARLY_TRAFFIC_SECRET" => &mut entry.client_early,
                "CLIENT_HANDSHAKE_TRAFFIC_SECRET" => &mut entry.client_handshake,
                "SERVER_HANDSHAKE_TRAFFIC_SECRET" => &mut entry.server_handshake,
                "CLIENT_TRAFFIC_SECRET_0" => &mut entry.client_traffic,
                "SERVER_TRAFFIC_SECRET_0" => &mut entry.server_traffic,
                _ => continue,
            };
            *slot = Some(secret);
        }
        entries.retain(|_, secrets| secrets != &Secrets::default());
        KeyLog { entries }
    }

    /// Adds the secrets of `other` (a key log a capture embeds, beside the one `--keylog`
    /// gave): a handshake named in both takes each secret `other` has.
    pub fn merge(&mut self, other: KeyLog) {
        for (random, secrets) in other.entries {
            let entry = self.entries.entry(random).or_default();
            for (slot, secret) in [
                (&mut entry.client_early, secrets.client_early),
                (&mut entry.client_handshake, secrets.client_handshake),
                (&mut entry.server_handshake, secrets.server_handshake),
                (&mut entry.client_traffic, secrets.client_traffic),
                (&mut entry.server_traffic, secrets.server_traffic),
            ] {
                if secret.is_some() {
                    *slot = secret;
                }
            }
        }
    }

    /// The secrets of the handshake whose ClientHello carried `client_random`.
    pub fn secrets(&self, client_random: &[u8]) -> Option<&Secrets> {
        self.entries.get(client_random)
    }

    /// The secrets whose server handshake key opens `record` (the server's first encrypted
    /// record, under TLS 1.3 suite `suite`), whatever client random names them. For an
    /// accepted Encrypted ClientHello: the handshake continued with the inner ClientHello,
    /// whose random (and so the key log's name for its secrets) never shows on the wire.
    /// Tries every entry (an HKDF expansion and one AEAD open each), which is why only such
    /// handshakes ask; the AEAD's tag makes a wrong match impossible.
    pub fn opening_server_record(
        &self,
        suite: u16,
        header: &[u8; 5],
        payload: &[u8],
    ) -> Option<&Secrets> {
        self.entries.values().find(|secrets| {
            secrets
                .server_handshake
                .as_deref()
                .and_then(|secret| Protection::new(suite, secret))
                .is_some_and(|mut protection| protection.open(header, payload).is_some())
        })
    }

    /// How many handshakes the log holds secrets for.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the log holds no usable secrets at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

enum Cipher {
    Aes128(Box<Aes128Gcm>),
    Aes256(Box<Aes256Gcm>),
    Chacha(Box<ChaCha20Poly1305>),
}

/// One direction's record protection under one traffic secret.
pub struct Protection {
    cipher: Cipher,
    iv: [u8; 12],
    /// Records opened under this key so far: the next one's sequence number.
    sequence: u64,
}

impl std::fmt::Debug for Protection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Protection")
            .field("sequence", &self.sequence)
            .finish_non_exhaustive()
    }
}

/// The HkdfLabel structure: length, "tls13 " + label, an empty context.
pub(crate) fn hkdf_label(label: &str, length: usize) -> Vec<u8> {
    let full = format!("tls13 {label}");
    let mut info = Vec::with_capacity(4 + full.len());
    info.extend_from_slice(&(length as u16).to_be_bytes());
    info.push(full.len() as u8);
    info.extend_from_slice(full.as_bytes());
    info.push(0);
    info
}

impl Protection {
    /// The protection of TLS 1.3 suite `suite` under `secret`; `None` for suites this
    /// reader does not decrypt (CCM) or a secret of the wrong size.
    pub fn new(suite: u16, secret: &[u8]) -> Option<Protection> {
        let key_length = match suite {
            0x1301 => 16,
            0x1302 | 0x1303 => 32,
            _ => return None,
        };
        let mut key = vec![0u8; key_length];
        let mut iv = [0u8; 12];
        match suite {
            0x1302 => {
                let hkdf = Hkdf::<Sha384>::from_prk(secret).ok()?;
                hkdf.expand(&hkdf_label("key", key_length), &mut key).ok()?;
                hkdf.expand(&hkdf_label("iv", 12), &mut iv).ok()?;
            }
            _ => {
                let hkdf = Hkdf::<Sha256>::from_prk(secret).ok()?;
                hkdf.expand(&hkdf_label("key", key_length), &mut key).ok()?;
                hkdf.expand(&hkdf_label("iv", 12), &mut iv).ok()?;
            }
        }
        let cipher = match suite {
            0x1301 => Cipher::Aes128(Box::new(Aes128Gcm::new_from_slice(&key).ok()?)),
            0x1302 => Cipher::Aes256(Box::new(Aes256Gcm::new_from_slice(&key).ok()?)),
            _ => Cipher::Chacha(Box::new(ChaCha20Poly1305::new_from_slice(&key).ok()?)),
        };
        Some(Protection {
            cipher,
            iv,
            sequence: 0,
        })
    }

    /// Counts `records` sealed under this key that went by unread.
    pub fn skip(&mut self, records: u64) {
        self.sequence += records;
    }

    /// Opens the record with `header` and `payload`: its inner content type and content,
    /// or `None` when this key did not seal it (the sequence number then stays).
    pub fn open(&mut self, header: &[u8; 5], payload: &[u8]) -> Option<(u8, Vec<u8>)> {
        let mut nonce = self.iv;
        for (byte, sequence) in nonce[4..].iter_mut().zip(self.sequence.to_be_bytes()) {
            *byte ^= sequence;
        }
        let nonce = Nonce::from_slice(&nonce);
        let mut buffer = payload.to_vec();
        let opened = match &self.cipher {
            Cipher::Aes128(cipher) => cipher.decrypt_in_place(nonce, header, &mut buffer),
            Cipher::Aes256(cipher) => cipher.decrypt_in_place(nonce, header, &mut buffer),
            Cipher::Chacha(cipher) => cipher.decrypt_in_place(nonce, header, &mut buffer),
        };
        opened.ok()?;
        self.sequence += 1;
        // TLSInnerPlaintext: content, its type, then zero padding.
        let end = buffer.iter().rposition(|&byte| byte != 0)?;
        let content_type = buffer[end];
        buffer.truncate(end);
        Some((content_type, buffer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_logs_keep_tls13_secrets_by_client_random() {
        let log = KeyLog::parse(
            "# a comment\n\
             CLIENT_RANDOM 00 11\n\
             CLIENT_HANDSHAKE_TRAFFIC_SECRET 0a0b 0102\n\
             SERVER_TRAFFIC_SECRET_0 0a0b 0304\n\
             SERVER_HANDSHAKE_TRAFFIC_SECRET zz 0506\n\
             half a line\n",
        );
        assert_eq!(log.len(), 1);
        let secrets = log.secrets(&[0x0a, 0x0b]).unwrap();
        assert_eq!(secrets.client_handshake.as_deref(), Some(&[1, 2][..]));
        assert_eq!(secrets.server_traffic.as_deref(), Some(&[3, 4][..]));
        assert_eq!(secrets.server_handshake, None);
    }

    #[test]
    fn an_embedded_key_log_adds_to_the_given_one() {
        let mut given = KeyLog::parse(
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET 0a0b 0102\n\
             SERVER_HANDSHAKE_TRAFFIC_SECRET 0c0d 0304\n",
        );
        given.merge(KeyLog::parse(
            "SERVER_HANDSHAKE_TRAFFIC_SECRET 0a0b 0506\n\
             SERVER_HANDSHAKE_TRAFFIC_SECRET 0c0d 0708\n\
             CLIENT_TRAFFIC_SECRET_0 0e0f 0910\n",
        ));
        assert_eq!(given.len(), 3);
        let first = given.secrets(&[0x0a, 0x0b]).unwrap();
        assert_eq!(first.client_handshake.as_deref(), Some(&[1, 2][..]));
        assert_eq!(first.server_handshake.as_deref(), Some(&[5, 6][..]));
        // A secret both name: the embedded one, written with the capture, wins.
        let second = given.secrets(&[0x0c, 0x0d]).unwrap();
        assert_eq!(second.server_handshake.as_deref(), Some(&[7, 8][..]));
        assert!(given.secrets(&[0x0e, 0x0f]).is_some());
    }

    /// RFC 8448 (Example Handshake Traces for TLS 1.3), section 3: the server's handshake
    /// traffic secret, its key and IV, and the server's first encrypted record.
    #[test]
    fn the_rfc_8448_server_flight_decrypts() {
        let secret =
            hex("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38").unwrap();
        let mut key = [0u8; 16];
        let mut iv = [0u8; 12];
        let hkdf = Hkdf::<Sha256>::from_prk(&secret).unwrap();
        hkdf.expand(&hkdf_label("key", 16), &mut key).unwrap();
        hkdf.expand(&hkdf_label("iv", 12), &mut iv).unwrap();
        assert_eq!(
            key.to_vec(),
            hex("3fce516009c21727d0f2e4e86ee403bc").unwrap()
        );
        assert_eq!(iv.to_vec(), hex("5d313eb2671276ee13000b30").unwrap());
        let mut protection = Protection::new(0x1301, &secret).unwrap();
        // A record sealed under another key does not open, and costs no sequence number.
        assert_eq!(protection.open(&[23, 3, 3, 0, 17], &[0; 17]), None);
        assert_eq!(protection.sequence, 0);
    }
}
