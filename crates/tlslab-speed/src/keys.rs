//! Keys made once per process and shared by both backends: an RSA key of 15360 bits takes
//! OpenSSL tens of seconds to find, a 7680-bit one seconds, and a DSA key's parameters
//! seconds too. aws-lc-rs signs with the same RSA key, read from OpenSSL's PKCS #8, so both
//! columns price the same key.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use openssl::dsa::Dsa;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;

use crate::SpeedError;

/// A key family made here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Family {
    Rsa,
    Dsa,
}

type Made = Result<Arc<PKey<Private>>, SpeedError>;

/// Each key's cell, by family and size.
type Cells = Mutex<HashMap<(Family, u32), Arc<OnceLock<Made>>>>;

/// The keys made so far, each behind its own cell so that making one does not hold the map.
fn cells() -> &'static Cells {
    static CELLS: OnceLock<Cells> = OnceLock::new();
    CELLS.get_or_init(Default::default)
}

/// The process's `family` key of `bits`, made on first use.
pub(crate) fn key(family: Family, bits: u32) -> Made {
    let cell = {
        let mut cells = cells()
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        cells.entry((family, bits)).or_default().clone()
    };
    cell.get_or_init(|| {
        let made = match family {
            Family::Rsa => Rsa::generate(bits).and_then(PKey::from_rsa),
            Family::Dsa => Dsa::generate(bits).and_then(PKey::from_dsa),
        };
        made.map(Arc::new).map_err(|error| {
            SpeedError::library(
                "OpenSSL",
                format!("make a {bits}-bit {family:?} key"),
                error,
            )
        })
    })
    .clone()
}

/// The bits of an `rsa2048`-style name after its prefix.
pub(crate) fn bits(name: &str, prefix: &str) -> u32 {
    name.strip_prefix(prefix)
        .and_then(|bits| bits.parse().ok())
        .unwrap_or(0)
}
