//! The `authorization` and `accounts` blocks (nats-server's), and what they share: users and
//! their permissions. Their keys, with nats-server's aliases, are these serde structs' fields;
//! keys of nats-server that beaver does not have are read only to be refused or warned about
//! by name.

use super::values::Seconds;
use super::Apply;
use crate::config::auth::check_permissions;
use crate::config::{
    AccountConfig, Authorization, ConfigError, Permissions, SubjectPermission, User, GLOBAL_ACCOUNT,
};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use toml::Spanned;

/// `[authorization]`: nats-server's `authorization` block.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileAuthorization {
    #[serde(alias = "username")]
    user: Option<String>,
    #[serde(alias = "pass")]
    password: Option<String>,
    token: Option<String>,
    timeout: Option<Spanned<Seconds>>,
    users: Option<Vec<Spanned<FileUser>>>,
    /// Permissions of the `users` that have none of their own.
    #[serde(alias = "default_permission")]
    default_permissions: Option<Spanned<FilePermissions>>,
}

/// `accounts`: a map from account name to its block (`accounts { A { users [...] } }`,
/// `[accounts.A]`), or nats-server's list of names (`accounts [A, B]`: accounts without
/// users). A name given twice takes its last block, as nats-server's map of accounts does.
pub(crate) struct FileAccounts(Vec<(String, Spanned<FileAccount>)>);

impl<'de> Deserialize<'de> for FileAccounts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FileAccounts;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("map entries for accounts (`accounts { NAME { users [...] } }`)")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut m: A) -> Result<FileAccounts, A::Error> {
                let mut out: Vec<(String, Spanned<FileAccount>)> = Vec::new();
                while let Some(name) = m.next_key::<String>()? {
                    let block = m.next_value::<Spanned<FileAccount>>()?;
                    out.retain(|(n, _)| *n != name);
                    out.push((name, block));
                }
                Ok(FileAccounts(out))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut s: A) -> Result<FileAccounts, A::Error> {
                let mut out: Vec<(String, Spanned<FileAccount>)> = Vec::new();
                while let Some(name) = s.next_element::<Spanned<String>>()? {
                    let span = name.span();
                    let name = name.into_inner();
                    out.retain(|(n, _)| *n != name);
                    out.push((name, Spanned::new(span, FileAccount::default())));
                }
                Ok(FileAccounts(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// One account's block. `users` and `default_permissions` are read; the other keys
/// nats-server knows are features beaver does not have yet: accepted, warned about, ignored.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileAccount {
    users: Option<Vec<Spanned<FileUser>>>,
    default_permissions: Option<Spanned<FilePermissions>>,
    exports: Option<Spanned<de::IgnoredAny>>,
    imports: Option<Spanned<de::IgnoredAny>>,
    jetstream: Option<Spanned<de::IgnoredAny>>,
    #[serde(alias = "maps")]
    mappings: Option<Spanned<de::IgnoredAny>>,
    limits: Option<Spanned<de::IgnoredAny>>,
    nkey: Option<Spanned<de::IgnoredAny>>,
}

/// One entry of `users`. `nkey` and `allowed_connection_types` are nats-server's, not
/// beaver's: they are read only to be refused by name (ignoring them would lock the user out
/// or let it in where the file says not to).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileUser {
    #[serde(alias = "username")]
    user: Option<String>,
    #[serde(alias = "pass")]
    password: Option<String>,
    #[serde(alias = "permission")]
    permissions: Option<FilePermissions>,
    nkey: Option<Spanned<de::IgnoredAny>>,
    allowed_connection_types: Option<Spanned<de::IgnoredAny>>,
}

/// `permissions = { publish = ..., subscribe = ... }` (nats-server also says `pub`/`sub`).
/// `allow_responses` is read but not implemented: see [`FilePermissions::into_permissions`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePermissions {
    #[serde(alias = "pub")]
    publish: Option<PermSpec>,
    #[serde(alias = "sub")]
    subscribe: Option<PermSpec>,
    allow_responses: Option<Spanned<AllowResponses>>,
}

/// nats-server's `allow_responses`: `true`/`false`, or `{ max, expires }` (enabled).
struct AllowResponses(bool);

impl<'de> Deserialize<'de> for AllowResponses {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AllowResponses;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("true, false, or a table with `max` and `expires`")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<AllowResponses, E> {
                Ok(AllowResponses(v))
            }
            fn visit_map<A: de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<AllowResponses, A::Error> {
                while m.next_entry::<de::IgnoredAny, de::IgnoredAny>()?.is_some() {}
                Ok(AllowResponses(true))
            }
        }
        d.deserialize_any(V)
    }
}

/// A permission: one subject, a list of subjects (both mean allow), or a table with `allow`
/// and `deny`. Read as a struct, so that the table's keys are matched like any other block's
/// (case-insensitively in a nats-server file).
enum PermSpec {
    One(String),
    List(Vec<String>),
    Table(FileSubjectPermission),
}

impl<'de> Deserialize<'de> for PermSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PermSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a subject, a list of subjects, or a table with `allow` and `deny` lists",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PermSpec, E> {
                Ok(PermSpec::One(v.to_owned()))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut s: A) -> Result<PermSpec, A::Error> {
                let mut list = Vec::new();
                while let Some(subject) = s.next_element::<String>()? {
                    list.push(subject);
                }
                Ok(PermSpec::List(list))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, m: A) -> Result<PermSpec, A::Error> {
                FileSubjectPermission::deserialize(de::value::MapAccessDeserializer::new(m))
                    .map(PermSpec::Table)
            }
        }
        d.deserialize_struct("PermSpec", FILE_SUBJECT_PERMISSION_FIELDS, V)
    }
}

/// [`FileSubjectPermission`]'s keys.
const FILE_SUBJECT_PERMISSION_FIELDS: &[&str] = &["allow", "deny"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSubjectPermission {
    allow: Option<OneOrMany>,
    deny: Option<OneOrMany>,
}

#[derive(Deserialize)]
#[serde(untagged, expecting = "a subject or a list of subjects")]
pub(super) enum OneOrMany {
    /// One subject.
    One(String),
    /// A list.
    Many(Vec<String>),
}

impl FilePermissions {
    /// The permissions, and a warning if `allow_responses` was given. beaver does not have
    /// it: the user may not publish to the reply subjects of the requests it receives unless
    /// its publish permissions allow them. Where nats-server would allow responses only (no
    /// `publish.allow`), every publish is denied, never more than the file allows.
    fn into_permissions(
        self,
        locate: &dyn Fn(std::ops::Range<usize>) -> String,
    ) -> (Permissions, Option<String>) {
        let mut p = Permissions {
            publish: self.publish.map(PermSpec::into_permission),
            subscribe: self.subscribe.map(PermSpec::into_permission),
        };
        let warning = match self.allow_responses {
            Some(r) if r.get_ref().0 => {
                let pubs = p.publish.get_or_insert_with(SubjectPermission::default);
                let only_responses = pubs.allow.is_empty();
                if only_responses {
                    pubs.deny = vec![">".to_owned()];
                }
                Some(format!(
                    "{}: \"allow_responses\" is not supported by beaver yet: ignored; {}",
                    locate(r.span()),
                    if only_responses {
                        "this user may not publish at all (nats-server would allow it replies)"
                    } else {
                        "this user may publish replies only where `publish` allows"
                    }
                ))
            }
            _ => None,
        };
        (p, warning)
    }
}

impl OneOrMany {
    /// The subjects, one or many.
    pub(super) fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

impl PermSpec {
    fn into_permission(self) -> SubjectPermission {
        match self {
            PermSpec::One(s) => SubjectPermission {
                allow: vec![s],
                deny: Vec::new(),
            },
            PermSpec::List(allow) => SubjectPermission {
                allow,
                deny: Vec::new(),
            },
            PermSpec::Table(t) => SubjectPermission {
                allow: t.allow.map(OneOrMany::into_vec).unwrap_or_default(),
                deny: t.deny.map(OneOrMany::into_vec).unwrap_or_default(),
            },
        }
    }
}

/// Applies the `authorization` block: one user, a token, or a list of users (each name
/// unique across the file), with their permissions.
pub(super) fn apply_authorization(
    cx: &mut Apply,
    block: Spanned<FileAuthorization>,
) -> Result<(), ConfigError> {
    let span = block.span();
    let a = block.into_inner();
    let mut auth = Authorization {
        user: a.user,
        password: a.password,
        token: a.token,
        ..Authorization::default()
    };
    if let Some(v) = a.timeout {
        auth.timeout = cx.duration("authorization.timeout", v)?.0;
    }
    auth.users = users(cx, a.users, "authorization.users")?;
    if let Some(p) = a.default_permissions {
        let pspan = p.span();
        let p = read_permissions(cx, p.into_inner());
        check_permissions(&p).map_err(|m| cx.err("authorization.default_permissions", pspan, m))?;
        give_default_permissions(&mut auth.users, &p);
    }
    if auth.user.is_some() && !auth.users.is_empty() {
        return Err(cx.err(
            "authorization",
            span,
            "can not have a single user/pass (`user`) and a users array (`users`)".into(),
        ));
    }
    if auth.token.is_some() && (auth.user.is_some() || !auth.users.is_empty()) {
        return Err(cx.err(
            "authorization",
            span,
            "can not have a token (`token`) and a user (`user` or `users`)".into(),
        ));
    }
    cx.config.authorization = Some(auth);
    Ok(())
}

/// Applies the `accounts` block (after `authorization`, whose single user or token it
/// excludes).
pub(super) fn apply_accounts(cx: &mut Apply, accounts: FileAccounts) -> Result<(), ConfigError> {
    cx.config.accounts.clear();
    let accounts_span = accounts.0.first().map(|(_, b)| b.span());
    for (name, block) in accounts.0 {
        let span = block.span();
        if name == GLOBAL_ACCOUNT {
            return Err(cx.err("accounts", span, format!("{name:?} is a Reserved Account")));
        }
        let block = block.into_inner();
        let key = format!("accounts.{name}");
        // An account's nkey is its identity in JWT authentication (operator mode), which
        // beaver does not have: refused, as the other JWT settings are
        // (`natsfile::REFUSED_KEYS`).
        if let Some(v) = &block.nkey {
            return Err(ConfigError {
                message: format!(
                    "{}: key `{key}.nkey`: beaver does not support JWT authentication \
                     (account nkeys) yet, and will not start without the security this \
                     file asks for",
                    (cx.locate)(v.span())
                ),
            });
        }
        let default_permissions = block
            .default_permissions
            .map(|p| read_permissions(cx, p.into_inner()));
        let mut account = AccountConfig {
            users: users(cx, block.users, &format!("{key}.users"))?,
            default_permissions,
            name,
        };
        if let Some(p) = &account.default_permissions {
            check_permissions(p)
                .map_err(|m| cx.err(&format!("{key}.default_permissions"), span.clone(), m))?;
        }
        for (k, v, what) in [
            (
                "exports",
                &block.exports,
                "imports and exports are not supported yet",
            ),
            (
                "imports",
                &block.imports,
                "imports and exports are not supported yet",
            ),
            (
                "jetstream",
                &block.jetstream,
                "account JetStream limits are not supported yet: with JetStream on, every \
                 account has it, unlimited",
            ),
            (
                "mappings",
                &block.mappings,
                "subject mappings are not supported yet",
            ),
            (
                "limits",
                &block.limits,
                "account limits are not supported yet",
            ),
        ] {
            if let Some(v) = v {
                let at = (cx.locate)(v.span());
                cx.warnings
                    .push(format!("{at}: key `{key}.{k}`: {what}; ignored"));
            }
        }
        if account.name == "$SYS" {
            let at = (cx.locate)(span);
            cx.warnings.push(format!(
                "{at}: key `{key}`: beaver has no system account; \"$SYS\" is an ordinary \
                 account (no $SYS.> events or requests)"
            ));
        }
        if let Some(p) = &account.default_permissions {
            give_default_permissions(&mut account.users, p);
        }
        cx.config.accounts.push(account);
    }
    if let (Some(a), Some(account)) = (cx.config.authorization.as_ref(), accounts_span) {
        if !cx.config.accounts.is_empty() && (a.token.is_some() || a.user.is_some()) {
            let what = if a.token.is_some() {
                "a token"
            } else {
                "a single user/pass"
            };
            return Err(cx.err(
                "accounts",
                account,
                format!("can not have {what} (in `authorization`) and accounts"),
            ));
        }
    }
    Ok(())
}

/// Users without permissions of their own get the block's `default_permissions`.
fn give_default_permissions(users: &mut [User], p: &Permissions) {
    for u in users {
        if u.permissions.is_none() {
            u.permissions = Some(p.clone());
        }
    }
}

/// Reads a `users` list (of `authorization` or of an account, named `key` in errors).
fn users(
    cx: &mut Apply,
    list: Option<Vec<Spanned<FileUser>>>,
    key: &str,
) -> Result<Vec<User>, ConfigError> {
    let mut out = Vec::new();
    for u in list.unwrap_or_default() {
        let uspan = u.span();
        let u = u.into_inner();
        // Refused rather than ignored: an nkey user would be locked out, and a user limited
        // to other connection types would be let in.
        if let Some(v) = &u.nkey {
            return Err(ConfigError {
                message: format!(
                    "{}: \"nkey\" (nkeys) is not supported by beaver yet",
                    (cx.locate)(v.span())
                ),
            });
        }
        if let Some(v) = &u.allowed_connection_types {
            return Err(ConfigError {
                message: format!(
                    "{}: \"allowed_connection_types\" is not supported by beaver yet",
                    (cx.locate)(v.span())
                ),
            });
        }
        let (Some(user), Some(password)) = (u.user, u.password) else {
            return Err(cx.err(key, uspan, "each user needs `user` and `password`".into()));
        };
        let permissions = u.permissions.map(|p| read_permissions(cx, p));
        if let Some(p) = &permissions {
            check_permissions(p).map_err(|m| cx.err(key, uspan.clone(), m))?;
        }
        if user.is_empty() {
            return Err(cx.err(key, uspan, "`user` is empty".into()));
        }
        // nats-server's words.
        if !cx.seen_users.insert(user.clone()) {
            return Err(cx.err(key, uspan, format!("Duplicate user {user:?} detected")));
        }
        out.push(User {
            user,
            password,
            permissions,
        });
    }
    Ok(out)
}

/// The permissions of a block, warning about what beaver does not have of them.
fn read_permissions(cx: &mut Apply, p: FilePermissions) -> Permissions {
    let (p, warning) = p.into_permissions(cx.locate);
    cx.warnings.extend(warning);
    p
}
