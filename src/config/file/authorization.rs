//! The `authorization` and `accounts` blocks (nats-server's), and what they share: users and
//! their permissions. Their keys, with nats-server's aliases, are these serde structs' fields;
//! keys of nats-server that beaver does not have are read only to be refused or warned about
//! by name.

use super::values::Seconds;
use super::Apply;
use crate::config::auth::check_permissions;
use crate::config::{
    AccountConfig, Authorization, ConfigError, NkeyUser, Permissions, ResponsePermission,
    SubjectPermission, User, GLOBAL_ACCOUNT,
};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::time::Duration;
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
    exports: Option<Vec<Spanned<super::sharing::FileExport>>>,
    imports: Option<Vec<Spanned<super::sharing::FileImport>>>,
    jetstream: Option<Spanned<de::IgnoredAny>>,
    #[serde(alias = "maps")]
    mappings: Option<Spanned<de::IgnoredAny>>,
    limits: Option<Spanned<de::IgnoredAny>>,
    nkey: Option<Spanned<de::IgnoredAny>>,
}

/// One entry of `users`: a `user` with a `password`, or an `nkey`.
/// `allowed_connection_types` is nats-server's, not beaver's: it is read only to be refused
/// by name (ignoring it would let the user in where the file says not to).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileUser {
    #[serde(alias = "username")]
    user: Option<String>,
    #[serde(alias = "pass")]
    password: Option<String>,
    #[serde(alias = "permission")]
    permissions: Option<FilePermissions>,
    nkey: Option<Spanned<String>>,
    allowed_connection_types: Option<Spanned<de::IgnoredAny>>,
}

/// `permissions = { publish = ..., subscribe = ... }` (nats-server also says `pub`/`sub`, and
/// `import`/`export`, the words of `cluster.permissions`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FilePermissions {
    #[serde(alias = "pub", alias = "import")]
    publish: Option<PermSpec>,
    #[serde(alias = "sub", alias = "export")]
    subscribe: Option<PermSpec>,
    allow_responses: Option<Spanned<AllowResponses>>,
}

/// nats-server's `allow_responses`: `true`/`false`, or `{ max, expires }` (enabled; zero
/// or missing values take the defaults). An error names what is wrong, in nats-server's
/// words.
struct AllowResponses(Result<Option<ResponsePermission>, String>);

impl<'de> Deserialize<'de> for AllowResponses {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AllowResponses;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("true, false, or a table with `max` and `expires`")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<AllowResponses, E> {
                Ok(AllowResponses(Ok(v.then(ResponsePermission::default))))
            }
            fn visit_map<A: de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<AllowResponses, A::Error> {
                let mut r = ResponsePermission::default();
                let mut error = None;
                while let Some(key) = m.next_key::<String>()? {
                    match key.to_ascii_lowercase().as_str() {
                        // As in nats-server: 0 takes the default, a negative value is
                        // no limit.
                        "max" | "max_msgs" | "max_messages" | "max_responses" => {
                            let n: i64 = m.next_value()?;
                            if n < 0 {
                                r.max = usize::MAX;
                            } else if n > 0 {
                                r.max = usize::try_from(n).unwrap_or(usize::MAX);
                            }
                        }
                        "expires" | "expiration" | "ttl" => {
                            #[derive(Deserialize)]
                            #[serde(untagged)]
                            enum Expires {
                                Seconds(i64),
                                Text(String),
                            }
                            match m.next_value::<Expires>()? {
                                Expires::Seconds(n) if n < 0 => r.expires = Duration::MAX,
                                Expires::Seconds(n) if n > 0 => {
                                    r.expires = Duration::from_secs(n.unsigned_abs())
                                }
                                Expires::Seconds(_) => {}
                                Expires::Text(t) if t.trim_start().starts_with('-') => {
                                    r.expires = Duration::MAX
                                }
                                Expires::Text(t) => {
                                    match crate::config::units::parse_duration(&t) {
                                        Ok(d) if !d.is_zero() => r.expires = d,
                                        Ok(_) => {}
                                        Err(e) => {
                                            error = Some(format!("error parsing expires: {e}"))
                                        }
                                    }
                                }
                            }
                        }
                        other => {
                            m.next_value::<de::IgnoredAny>()?;
                            error = Some(format!("Unknown field {other:?} parsing permissions"));
                        }
                    }
                }
                Ok(AllowResponses(match error {
                    Some(e) => Err(e),
                    None => Ok(Some(r)),
                }))
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
    /// The permissions; `Err`: what is wrong with `allow_responses`.
    pub(super) fn into_permissions(self) -> Result<Permissions, String> {
        let response = match self.allow_responses.map(Spanned::into_inner) {
            Some(AllowResponses(r)) => r?,
            None => None,
        };
        Ok(Permissions {
            publish: self.publish.map(PermSpec::into_permission),
            subscribe: self.subscribe.map(PermSpec::into_permission),
            response,
        })
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
    (auth.users, auth.nkeys) = users(cx, a.users, "authorization.users")?;
    if let Some(p) = a.default_permissions {
        let pspan = p.span();
        let p = p
            .into_inner()
            .into_permissions()
            .map_err(|m| cx.err("authorization.default_permissions", pspan.clone(), m))?;
        check_permissions(&p).map_err(|m| cx.err("authorization.default_permissions", pspan, m))?;
        give_default_permissions(&mut auth.users, &mut auth.nkeys, &p);
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
        let default_permissions = match block.default_permissions {
            Some(p) => {
                let pspan = p.span();
                Some(
                    p.into_inner()
                        .into_permissions()
                        .map_err(|m| cx.err(&format!("{key}.default_permissions"), pspan, m))?,
                )
            }
            None => None,
        };
        let (users, nkeys) = users(cx, block.users, &format!("{key}.users"))?;
        let exports = super::sharing::exports(cx, &format!("{key}.exports"), block.exports)?;
        let imports = super::sharing::imports(cx, &format!("{key}.imports"), block.imports)?;
        let mut account = AccountConfig {
            users,
            nkeys,
            default_permissions,
            exports,
            imports,
            name,
        };
        if let Some(p) = &account.default_permissions {
            check_permissions(p)
                .map_err(|m| cx.err(&format!("{key}.default_permissions"), span.clone(), m))?;
        }
        for (k, v, what) in [
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
                "{at}: key `{key}`: \"$SYS\" is the system account (server requests and \
                 client events; account requests are not supported yet)"
            ));
        }
        if let Some(p) = &account.default_permissions {
            give_default_permissions(&mut account.users, &mut account.nkeys, p);
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
fn give_default_permissions(users: &mut [User], nkeys: &mut [NkeyUser], p: &Permissions) {
    let own = users
        .iter_mut()
        .map(|u| &mut u.permissions)
        .chain(nkeys.iter_mut().map(|u| &mut u.permissions));
    for permissions in own {
        if permissions.is_none() {
            *permissions = Some(p.clone());
        }
    }
}

/// Reads a `users` list (of `authorization` or of an account, named `key` in errors): the
/// users with a name and password, and those with an nkey.
fn users(
    cx: &mut Apply,
    list: Option<Vec<Spanned<FileUser>>>,
    key: &str,
) -> Result<(Vec<User>, Vec<NkeyUser>), ConfigError> {
    let mut out = Vec::new();
    let mut nkeys = Vec::new();
    for u in list.unwrap_or_default() {
        let uspan = u.span();
        let u = u.into_inner();
        // Refused rather than ignored: a user limited to other connection types would be
        // let in.
        if let Some(v) = &u.allowed_connection_types {
            return Err(ConfigError {
                message: format!(
                    "{}: \"allowed_connection_types\" is not supported by beaver yet",
                    (cx.locate)(v.span())
                ),
            });
        }
        let permissions = match u.permissions {
            Some(p) => Some(
                p.into_permissions()
                    .map_err(|m| cx.err(key, uspan.clone(), m))?,
            ),
            None => None,
        };
        if let Some(p) = &permissions {
            check_permissions(p).map_err(|m| cx.err(key, uspan.clone(), m))?;
        }
        if let Some(nkey) = u.nkey {
            // nats-server's checks and words.
            let nspan = nkey.span();
            let nkey = nkey.into_inner();
            if !crate::config::auth::is_public_user_key(&nkey) {
                let message = "Not a valid public nkey for a user".into();
                return Err(cx.err(key, nspan, message));
            }
            if u.user.is_some() || u.password.is_some() {
                let message = "Nkey users do not take usernames or passwords".into();
                return Err(cx.err(key, uspan, message));
            }
            if !cx.seen_users.insert(nkey.clone()) {
                let message = format!("Duplicate nkey {nkey:?} detected");
                return Err(cx.err(key, nspan, message));
            }
            nkeys.push(NkeyUser { nkey, permissions });
            continue;
        }
        let (Some(user), Some(password)) = (u.user, u.password) else {
            return Err(cx.err(key, uspan, "each user needs `user` and `password`".into()));
        };
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
    Ok((out, nkeys))
}
