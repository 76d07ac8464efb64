//! The on-disk cache: where it lives, how a profile is published so that readers never see
//! half-written material, and how cached material is read back.
//!
//! A profile is generated into a temporary sibling directory and published with one
//! `rename`, which is atomic: a profile directory either does not exist or is complete. A
//! lock file per profile keeps concurrent processes from generating the same profile twice
//! (RSA-4096 takes seconds); the rename alone already keeps the result correct, so where
//! the file system cannot lock, generation goes ahead without the lock.

use std::ffi::OsString;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tlslab_core::CertProfile;

use crate::error::{PkiError, PkiErrorKind};
use crate::generate::{generate_profile, ProfileMaterial};
use crate::lab_client::{CLIENT_CERTIFICATE_FILE, CLIENT_DIRECTORY, CLIENT_KEY_FILE};

/// File names inside a profile directory.
pub(crate) const ROOT_CERTIFICATE_FILE: &str = "root.pem";
pub(crate) const ROOT_KEY_FILE: &str = "root.key";
pub(crate) const LEAF_KEY_FILE: &str = "leaf.key";

pub(crate) fn intermediate_key_file(index: usize) -> String {
    format!("intermediate{index}.key")
}

pub(crate) fn chain_file(depth: u8) -> String {
    format!("chain{depth}.pem")
}

/// Private keys: readable by the owner only, set at creation so there is no window in
/// which another user could open the file.
const KEY_MODE: u32 = 0o600;
const CERTIFICATE_MODE: u32 = 0o644;
const DIRECTORY_MODE: u32 = 0o700;

/// A temporary directory this old belongs to a process that died while generating.
const ABANDONED_AFTER: Duration = Duration::from_secs(60 * 60);

/// The cache directory when the caller names none, in the documented order.
pub(crate) fn default_directory(variable: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let non_empty = |name: &str| variable(name).filter(|value| !value.is_empty());
    if let Some(explicit) = non_empty("TLSLAB_PKI_DIR") {
        return Some(PathBuf::from(explicit));
    }
    // The XDG specification says relative values are invalid and must be ignored.
    if let Some(cache) = non_empty("XDG_CACHE_HOME").map(PathBuf::from) {
        if cache.is_absolute() {
            return Some(cache.join("tlslab").join("pki"));
        }
    }
    non_empty("HOME").map(|home| {
        PathBuf::from(home)
            .join(".cache")
            .join("tlslab")
            .join("pki")
    })
}

/// Creates the cache directory (and its parents) owner-only if it does not exist.
pub(crate) fn create_cache_directory(dir: &Path) -> Result<(), PkiError> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIRECTORY_MODE)
        .create(dir)
        .map_err(|error| PkiError::cache_io("create the certificate cache directory", dir, error))
}

/// Makes sure `<dir>/<profile>` holds published material and returns its path.
pub(crate) fn ensure_profile(dir: &Path, profile: CertProfile) -> Result<PathBuf, PkiError> {
    let profile_dir = dir.join(profile.as_str());
    if is_published(&profile_dir)? {
        return Ok(profile_dir);
    }
    let _lock = ProfileLock::acquire(dir, profile.as_str())?;
    // Whoever held the lock before us may have published it meanwhile.
    if is_published(&profile_dir)? {
        return Ok(profile_dir);
    }
    remove_abandoned_temporaries(dir, profile);
    let material = generate_profile(profile)?;
    let temporary = write_temporary(dir, profile, &material)?;
    publish(&temporary, &profile_dir)?;
    Ok(profile_dir)
}

fn is_published(profile_dir: &Path) -> Result<bool, PkiError> {
    // Following symlinks lets a user point a profile at material kept elsewhere.
    match fs::metadata(profile_dir) {
        Ok(metadata) if metadata.is_dir() => Ok(true),
        Ok(_) => Err(PkiError::damaged_cache(
            profile_dir,
            "it is not a directory",
        )),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(PkiError::cache_io("inspect", profile_dir, error)),
    }
}

/// How a publication ended; both outcomes leave one complete profile directory.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Publication {
    Published,
    /// Another process or thread published first; ours was discarded.
    AlreadyPublished,
}

/// Moves a fully written temporary directory into place with one atomic rename.
pub(crate) fn publish(temporary: &Path, profile_dir: &Path) -> Result<Publication, PkiError> {
    match fs::rename(temporary, profile_dir) {
        Ok(()) => {
            // Make the rename itself durable, so a crash cannot lose a published profile
            // that a running lab server already uses.
            if let Some(parent) = profile_dir.parent() {
                let _ = File::open(parent).and_then(|directory| directory.sync_all());
            }
            Ok(Publication::Published)
        }
        // rename(2) refuses to replace a non-empty directory: the race was lost, and the
        // winner's material is as good as ours.
        Err(_) if profile_dir.is_dir() => {
            let _ = fs::remove_dir_all(temporary);
            Ok(Publication::AlreadyPublished)
        }
        Err(error) => {
            let _ = fs::remove_dir_all(temporary);
            Err(PkiError::cache_io("publish", profile_dir, error))
        }
    }
}

fn temporary_prefix(profile: CertProfile) -> String {
    format!(".{}.tmp-", profile.as_str())
}

/// Writes every file of a profile into a fresh hidden sibling directory of the final one.
pub(crate) fn write_temporary(
    dir: &Path,
    profile: CertProfile,
    material: &ProfileMaterial,
) -> Result<PathBuf, PkiError> {
    let mut files = vec![
        (
            ROOT_CERTIFICATE_FILE.to_string(),
            material.root_certificate_pem.as_str(),
            CERTIFICATE_MODE,
        ),
        (
            ROOT_KEY_FILE.to_string(),
            material.root_key_pem.as_str(),
            KEY_MODE,
        ),
    ];
    for (offset, key_pem) in material.intermediate_key_pems.iter().enumerate() {
        files.push((
            intermediate_key_file(offset + 1),
            key_pem.as_str(),
            KEY_MODE,
        ));
    }
    files.push((
        LEAF_KEY_FILE.to_string(),
        material.leaf_key_pem.as_str(),
        KEY_MODE,
    ));
    for (offset, chain_pem) in material.chain_pems.iter().enumerate() {
        files.push((
            chain_file(offset as u8 + 1),
            chain_pem.as_str(),
            CERTIFICATE_MODE,
        ));
    }
    write_files(dir, &temporary_prefix(profile), &files)
}

fn write_file(directory: &Path, name: &str, contents: &str, mode: u32) -> Result<(), PkiError> {
    let path = directory.join(name);
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&path)
        .and_then(|mut file| {
            file.write_all(contents.as_bytes())?;
            file.sync_all()
        })
        .map_err(|error| PkiError::cache_io("write", &path, error))
}

/// Removes temporary directories of `profile` left behind by processes that died while
/// generating. Only old ones: a young one may belong to a process generating right now on a
/// file system where locking does not work. Failures are harmless leftovers, so ignored.
fn remove_abandoned_temporaries(dir: &Path, profile: CertProfile) {
    let prefix = temporary_prefix(profile);
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        let abandoned = entry
            .metadata()
            .and_then(|metadata| metadata.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > ABANDONED_AFTER);
        if abandoned {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// An exclusive `flock` on `<dir>/.<profile>.lock`, released when dropped (closing the file
/// releases it, also when the process dies). Each acquisition opens the file anew, so the
/// lock excludes threads of one process as well as other processes.
struct ProfileLock {
    _file: Option<File>,
}

impl ProfileLock {
    /// `name` is the profile's, or the profile's with `-client` for its client certificate.
    fn acquire(dir: &Path, name: &str) -> Result<ProfileLock, PkiError> {
        let path = dir.join(format!(".{name}.lock"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(KEY_MODE)
            .open(&path)
            .map_err(|error| PkiError::cache_io("open the lock file", &path, error))?;
        loop {
            // SAFETY: flock only reads the descriptor, which `file` keeps open.
            let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            if result == 0 {
                return Ok(ProfileLock { _file: Some(file) });
            }
            let error = io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EINTR) => continue,
                // File systems without locks (some network mounts): the atomic rename keeps
                // the result correct; at worst two processes generate the same profile.
                Some(libc::ENOLCK) | Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) => {
                    return Ok(ProfileLock { _file: None })
                }
                _ => return Err(PkiError::cache_io("lock", &path, error)),
            }
        }
    }
}

/// Makes sure `<dir>/<profile>/client` holds the profile's published client certificate
/// (issued by the profile's root, which is made first if needed) and returns its path.
pub(crate) fn ensure_client(dir: &Path, profile: CertProfile) -> Result<PathBuf, PkiError> {
    let profile_dir = ensure_profile(dir, profile)?;
    let client_dir = profile_dir.join(CLIENT_DIRECTORY);
    if is_published(&client_dir)? {
        return Ok(client_dir);
    }
    let _lock = ProfileLock::acquire(dir, &format!("{}-client", profile.as_str()))?;
    if is_published(&client_dir)? {
        return Ok(client_dir);
    }
    let read = |name: &str| {
        let path = profile_dir.join(name);
        fs::read(&path).map_err(|error| PkiError::cache_io("read", &path, error))
    };
    let material = crate::lab_client::issue(
        profile,
        &read(ROOT_CERTIFICATE_FILE)?,
        &read(ROOT_KEY_FILE)?,
        &profile_dir,
    )?;
    // Written beside its final place, inside the profile directory, so the rename that
    // publishes it stays on one file system.
    let temporary = write_files(
        &profile_dir,
        ".client.tmp-",
        &[
            (
                CLIENT_CERTIFICATE_FILE.to_string(),
                material.certificate_pem.as_str(),
                CERTIFICATE_MODE,
            ),
            (
                CLIENT_KEY_FILE.to_string(),
                material.key_pem.as_str(),
                KEY_MODE,
            ),
        ],
    )?;
    publish(&temporary, &client_dir)?;
    Ok(client_dir)
}

/// Writes `files` (name, contents, mode) into a fresh directory in `parent` whose name starts
/// with `prefix`, flushed to disk, and returns its path; removes it again on failure.
fn write_files(
    parent: &Path,
    prefix: &str,
    files: &[(String, &str, u32)],
) -> Result<PathBuf, PkiError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or_default();
    let temporary = parent.join(format!(
        "{prefix}{}-{}-{}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    DirBuilder::new()
        .mode(DIRECTORY_MODE)
        .create(&temporary)
        .map_err(|error| PkiError::cache_io("create", &temporary, error))?;
    let written = files
        .iter()
        .try_for_each(|(name, contents, mode)| write_file(&temporary, name, contents, *mode))
        // The files' data must reach the disk before the rename publishes them; otherwise a
        // crash could leave a published directory with empty files.
        .and_then(|()| {
            File::open(&temporary)
                .and_then(|directory| directory.sync_all())
                .map_err(|error| PkiError::cache_io("flush", &temporary, error))
        });
    if written.is_err() {
        let _ = fs::remove_dir_all(&temporary);
    }
    written.map(|()| temporary)
}

/// A lab client certificate and its key, read back from `<dir>/<profile>/client`.
pub(crate) struct CachedClient {
    pub certificate: CertificateDer<'static>,
    pub private_key: PrivateKeyDer<'static>,
    pub root: CertificateDer<'static>,
    pub certificate_pem: PathBuf,
    pub key_pem: PathBuf,
    pub root_pem: PathBuf,
}

pub(crate) fn read_client(client_dir: &Path) -> Result<CachedClient, PkiError> {
    let certificate_pem = client_dir.join(CLIENT_CERTIFICATE_FILE);
    let key_pem = client_dir.join(CLIENT_KEY_FILE);
    let root_pem = client_dir
        .parent()
        .unwrap_or(client_dir)
        .join(ROOT_CERTIFICATE_FILE);
    let damaged = |path: &Path, detail: String| {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        PkiError::damaged_cache(client_dir, format!("{name}: {detail}"))
    };
    let certificate = CertificateDer::from_pem_file(&certificate_pem)
        .map_err(|error| damaged(&certificate_pem, describe_pem_error(&error)))?;
    let private_key = PrivateKeyDer::from_pem_file(&key_pem)
        .map_err(|error| damaged(&key_pem, describe_pem_error(&error)))?;
    let root = CertificateDer::from_pem_file(&root_pem)
        .map_err(|error| damaged(&root_pem, describe_pem_error(&error)))?;
    Ok(CachedClient {
        certificate,
        private_key,
        root,
        certificate_pem,
        key_pem,
        root_pem,
    })
}

/// The material of one depth, read back from a published profile directory.
pub(crate) struct CachedChain {
    pub certificates: Vec<CertificateDer<'static>>,
    pub private_key: PrivateKeyDer<'static>,
    pub root: CertificateDer<'static>,
    pub chain_pem: PathBuf,
    pub key_pem: PathBuf,
    pub root_pem: PathBuf,
}

pub(crate) fn read_chain(profile_dir: &Path, depth: u8) -> Result<CachedChain, PkiError> {
    let chain_pem = profile_dir.join(chain_file(depth));
    let key_pem = profile_dir.join(LEAF_KEY_FILE);
    let root_pem = profile_dir.join(ROOT_CERTIFICATE_FILE);
    let damaged = |path: &Path, detail: String| {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        PkiError::damaged_cache(profile_dir, format!("{name}: {detail}"))
    };

    let certificates = CertificateDer::pem_file_iter(&chain_pem)
        .and_then(|certificates| certificates.collect::<Result<Vec<_>, _>>())
        .map_err(|error| damaged(&chain_pem, describe_pem_error(&error)))?;
    if certificates.len() != depth as usize {
        return Err(damaged(
            &chain_pem,
            format!(
                "holds {} certificates, expected {depth}",
                certificates.len()
            ),
        ));
    }
    let private_key = PrivateKeyDer::from_pem_file(&key_pem)
        .map_err(|error| damaged(&key_pem, describe_pem_error(&error)))?;
    let root = CertificateDer::from_pem_file(&root_pem)
        .map_err(|error| damaged(&root_pem, describe_pem_error(&error)))?;

    Ok(CachedChain {
        certificates,
        private_key,
        root,
        chain_pem,
        key_pem,
        root_pem,
    })
}

/// The PEM parser's own messages are terse ("no items found"); say it in the user's terms.
pub(crate) fn describe_pem_error(error: &rustls_pki_types::pem::Error) -> String {
    use rustls_pki_types::pem::Error;
    match error {
        Error::Io(error) if error.kind() == io::ErrorKind::NotFound => "file is missing".into(),
        Error::Io(error) => format!("cannot read: {error}"),
        Error::NoItemsFound => "holds no PEM item of the expected kind".into(),
        Error::MissingSectionEnd { .. } => "a PEM section has no END line (truncated?)".into(),
        Error::IllegalSectionStart { .. } => "a PEM BEGIN line is malformed".into(),
        Error::Base64Decode(detail) => format!("a PEM section is not valid base64 ({detail})"),
        other => other.to_string(),
    }
}

/// Neither the caller nor the environment named a place for the cache.
pub(crate) fn no_cache_directory() -> PkiError {
    PkiError::new(
        PkiErrorKind::NoCacheDirectory,
        "cannot choose a certificate cache directory: none of TLSLAB_PKI_DIR, XDG_CACHE_HOME \
         or HOME is set",
        "set TLSLAB_PKI_DIR to a writable directory",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::os::unix::fs::PermissionsExt;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(name, value)| (name.to_string(), OsString::from(value)))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn default_directory_follows_the_documented_order() {
        let all = [
            ("TLSLAB_PKI_DIR", "/explicit"),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HOME", "/home/lab"),
        ];
        assert_eq!(default_directory(lookup(&all)), Some("/explicit".into()));
        assert_eq!(
            default_directory(lookup(&all[1..])),
            Some("/xdg/tlslab/pki".into())
        );
        assert_eq!(
            default_directory(lookup(&all[2..])),
            Some("/home/lab/.cache/tlslab/pki".into())
        );
        assert_eq!(default_directory(lookup(&[])), None);
    }

    #[test]
    fn empty_and_relative_variables_are_ignored() {
        let pairs = [
            ("TLSLAB_PKI_DIR", ""),
            ("XDG_CACHE_HOME", "relative/cache"),
            ("HOME", "/home/lab"),
        ];
        assert_eq!(
            default_directory(lookup(&pairs)),
            Some("/home/lab/.cache/tlslab/pki".into())
        );
    }

    fn fresh_directory(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "tlslab-pki-unit-{name}-{}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        create_cache_directory(&dir).unwrap();
        dir
    }

    #[test]
    fn losing_the_rename_race_keeps_the_winner_and_discards_ours() {
        let dir = fresh_directory("race");
        let profile = CertProfile::Ed25519;
        let target = dir.join(profile.as_str());
        let first = write_temporary(&dir, profile, &generate_profile(profile).unwrap()).unwrap();
        let second = write_temporary(&dir, profile, &generate_profile(profile).unwrap()).unwrap();
        assert_eq!(publish(&first, &target).unwrap(), Publication::Published);
        let winner_root = fs::read(target.join(ROOT_CERTIFICATE_FILE)).unwrap();
        assert_eq!(
            publish(&second, &target).unwrap(),
            Publication::AlreadyPublished
        );
        assert!(
            !second.exists(),
            "the losing temporary directory is removed"
        );
        assert_eq!(
            fs::read(target.join(ROOT_CERTIFICATE_FILE)).unwrap(),
            winner_root
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn temporary_directory_is_owner_only_and_keys_are_private() {
        let dir = fresh_directory("modes");
        let profile = CertProfile::EcdsaP256;
        let temporary =
            write_temporary(&dir, profile, &generate_profile(profile).unwrap()).unwrap();
        let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&temporary), 0o700);
        assert_eq!(mode(&temporary.join(LEAF_KEY_FILE)), 0o600);
        assert_eq!(mode(&temporary.join(intermediate_key_file(4))), 0o600);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn abandoned_temporaries_are_removed_but_young_ones_stay() {
        let dir = fresh_directory("abandoned");
        let profile = CertProfile::Ed25519;
        let young = dir.join(format!("{}young", temporary_prefix(profile)));
        let old = dir.join(format!("{}old", temporary_prefix(profile)));
        fs::create_dir(&young).unwrap();
        fs::create_dir(&old).unwrap();
        let two_hours_ago = SystemTime::now() - Duration::from_secs(2 * 60 * 60);
        File::open(&old)
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();
        remove_abandoned_temporaries(&dir, profile);
        assert!(young.exists());
        assert!(!old.exists());
        fs::remove_dir_all(&dir).unwrap();
    }
}
