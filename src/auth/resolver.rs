//! The full account resolver's directory (nats-server's `DirJWTStore`, as its
//! `resolver { type: full, dir }` uses it): one file per account, `<public key>.jwt`, holding
//! the account's JWT as pushed (`nsc push`, `$SYS.REQ.CLAIMS.UPDATE`).
//!
//! The directory is the truth: it is read whole at start, written at each accepted push
//! (the file is replaced through a temporary file and a rename, so a crash leaves the old
//! JWT or the new one, never half of one), and a deleted account's file is renamed
//! `<key>.jwt.deleted`, as nats-server's `allow_delete` does. Nothing is kept in memory
//! here but a lock, which serialises writers (two pushes of one account must not interleave
//! their renames and limit checks); the trusted accounts are kept by
//! [`super::operator::Trust`].

use crate::config::operator::DirResolver;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};

/// The files' extension (nats-server's `fileExtension`).
const EXTENSION: &str = "jwt";

/// An account JWT directory (see the module docs).
#[derive(Debug)]
pub struct DirStore {
    dir: PathBuf,
    allow_delete: bool,
    limit: Option<u64>,
    /// Held while writing, renaming or counting files. A leaf lock.
    write: Mutex<()>,
}

/// What [`DirStore::save`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    /// The file was written (new, or different from what was there).
    Changed,
    /// The same JWT was already there (nats-server answers `jwt updated` all the same).
    Unchanged,
}

impl DirStore {
    /// Opens the directory of `config`, creating it when missing (as nats-server does when
    /// it reads the configuration). Errors name the directory.
    pub fn open(config: &DirResolver) -> Result<DirStore, String> {
        std::fs::create_dir_all(&config.dir).map_err(|e| {
            format!(
                "resolver: could not create the directory {}: {e}",
                config.dir.display()
            )
        })?;
        if !config.dir.is_dir() {
            return Err("dir needs to point to an accessible directory".into());
        }
        Ok(DirStore {
            dir: config.dir.clone(),
            allow_delete: config.allow_delete,
            limit: config.limit,
            write: Mutex::new(()),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether `$SYS.REQ.CLAIMS.DELETE` may remove accounts (`allow_delete`).
    pub fn allows_delete(&self) -> bool {
        self.allow_delete
    }

    /// The file of account `key`; `None` for a key that is not an nkey's public key (so no
    /// request can name a path outside the directory).
    fn path(&self, key: &str) -> Option<PathBuf> {
        nkeys::KeyPair::from_public_key(key).ok()?;
        Some(self.dir.join(format!("{key}.{EXTENSION}")))
    }

    /// The JWT stored for account `key`, if any.
    pub fn load(&self, key: &str) -> Option<String> {
        let text = std::fs::read_to_string(self.path(key)?).ok()?;
        Some(text.trim().to_owned())
    }

    /// The public keys of the stored accounts, sorted.
    pub fn keys(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut keys: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let key = name.strip_suffix(".jwt")?;
                self.path(key).is_some().then(|| key.to_owned())
            })
            .collect();
        keys.sort();
        keys
    }

    /// Every stored account: public key and JWT.
    pub fn load_all(&self) -> Vec<(String, String)> {
        self.keys()
            .into_iter()
            .filter_map(|key| {
                let jwt = self.load(&key)?;
                Some((key, jwt))
            })
            .collect()
    }

    /// Stores `jwt` as account `key`'s (nats-server's `save`). Errors: a key that is not a
    /// public key (`invalid public key`), a full directory (`jwt store is full`: `limit`
    /// files, and `key` is not one of them), or the file system's.
    pub fn save(&self, key: &str, jwt: &str) -> Result<Saved, String> {
        let path = self.path(key).ok_or("invalid public key")?;
        let _write = self.write.lock();
        if self.load(key).as_deref() == Some(jwt) {
            return Ok(Saved::Unchanged);
        }
        if let Some(limit) = self.limit {
            if !path.exists() && self.keys().len() as u64 >= limit {
                return Err("jwt store is full".into());
            }
        }
        // Written beside, then renamed over: a reader (or a crash) sees a whole JWT.
        let temporary = self.dir.join(format!(".{key}.{EXTENSION}.tmp"));
        std::fs::write(&temporary, jwt).map_err(|e| e.to_string())?;
        std::fs::rename(&temporary, &path).map_err(|e| e.to_string())?;
        Ok(Saved::Changed)
    }

    /// Stores a preloaded `jwt` unless the directory already holds a newer one of the same
    /// account (nats-server's `saveIfNewer`, for `resolver_preload`): `iat_of` reads a
    /// JWT's issue time.
    pub fn save_if_newer(
        &self,
        key: &str,
        jwt: &str,
        iat_of: impl Fn(&str) -> Option<i64>,
    ) -> Result<(), String> {
        if let Some(existing) = self.load(key) {
            if let (Some(old), Some(new)) = (iat_of(&existing), iat_of(jwt)) {
                if old > new {
                    return Ok(());
                }
            }
        }
        self.save(key, jwt).map(|_| ())
    }

    /// Removes account `key` (nats-server's `RenameDeleted`: the file becomes
    /// `<key>.jwt.deleted`). Errors: no such account, or the file system's.
    pub fn delete(&self, key: &str) -> Result<(), String> {
        let path = self.path(key).ok_or("invalid public key")?;
        let _write = self.write.lock();
        let deleted = self.dir.join(format!("{key}.{EXTENSION}.deleted"));
        std::fs::rename(&path, deleted).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &Path, limit: Option<u64>) -> DirStore {
        DirStore::open(&DirResolver {
            dir: dir.to_owned(),
            allow_delete: true,
            limit,
            interval: None,
            timeout: None,
        })
        .unwrap()
    }

    fn account_key() -> String {
        nkeys::KeyPair::new_account().public_key()
    }

    #[test]
    fn saves_loads_lists_and_deletes() {
        let dir = std::env::temp_dir().join(format!("beaver-dirstore-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = store(&dir.join("jwt"), Some(2));
        let (a, b, c) = (account_key(), account_key(), account_key());
        assert_eq!(s.save(&a, "one").unwrap(), Saved::Changed);
        assert_eq!(s.save(&a, "one").unwrap(), Saved::Unchanged);
        assert_eq!(s.save(&a, "two").unwrap(), Saved::Changed);
        assert_eq!(s.load(&a).as_deref(), Some("two"));
        s.save(&b, "b").unwrap();
        assert_eq!(s.save(&c, "c").unwrap_err(), "jwt store is full");
        // A key that is not a public key names no file.
        assert_eq!(
            s.save("../../etc/passwd", "x").unwrap_err(),
            "invalid public key"
        );
        assert_eq!(s.load("../x"), None);
        let mut keys = vec![a.clone(), b.clone()];
        keys.sort();
        assert_eq!(s.keys(), keys);
        s.delete(&b).unwrap();
        assert_eq!(s.keys(), vec![a.clone()]);
        assert!(s.dir().join(format!("{b}.jwt.deleted")).exists());
        assert!(s.delete(&b).is_err());
        // Newer preloads replace, older ones do not.
        let iat = |j: &str| j.parse::<i64>().ok();
        s.save_if_newer(&a, "5", iat).unwrap();
        s.save_if_newer(&a, "3", iat).unwrap();
        assert_eq!(s.load(&a).as_deref(), Some("5"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
