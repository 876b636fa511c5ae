//! Permission templates of scoped signing keys (nats-server's
//! `processUserPermissionsTemplate`): a scope's permissions may hold tokens that are filled in
//! for each user it signs, so that one key gives every user subjects of its own.
//!
//! | token | becomes |
//! | --- | --- |
//! | `{{name()}}` | the user JWT's `name` |
//! | `{{subject()}}` | the user's public key |
//! | `{{account-name()}}` | the account JWT's `name` |
//! | `{{account-subject()}}` | the user JWT's `issuer_account` |
//! | `{{tag(x)}}`, `{{account-tag(x)}}` | each value `v` of the user's (account's) tags `x:v`: one subject per combination |
//!
//! A whole token must be the template (`a.{{name()}}.b`, not `a.x{{name()}}`); the name of
//! the function is not case-sensitive. A subject that comes out invalid (an unknown function,
//! a name with a space, a tag the user lacks) is dropped from an `allow` list, and refuses
//! the user in a `deny` list; an `allow` list left empty that was not becomes a `deny` of
//! `>`, as in nats-server.

use crate::jwt::{self, Claims};

/// The permissions `template` (a scope's) gives `user` of `account` (see the module docs).
/// Errors: a `deny` subject came out invalid (the user is then refused).
pub(super) fn expand(
    template: &jwt::Permissions,
    user: &Claims<jwt::User>,
    account: &Claims<jwt::Account>,
) -> Result<jwt::Permissions, String> {
    let mut out = template.clone();
    let sub_allowed = !out.subscribe.allow.is_empty();
    let pub_allowed = !out.publish.allow.is_empty();
    out.subscribe.allow = apply(&out.subscribe.allow, false, user, account)?;
    out.subscribe.deny = apply(&out.subscribe.deny, true, user, account)?;
    out.publish.allow = apply(&out.publish.allow, false, user, account)?;
    out.publish.deny = apply(&out.publish.deny, true, user, account)?;
    if sub_allowed && out.subscribe.allow.is_empty() {
        out.subscribe.deny.push(">".into());
    }
    if pub_allowed && out.publish.allow.is_empty() {
        out.publish.deny.push(">".into());
    }
    Ok(out)
}

/// Whether `token` is a template (`{{...}}`).
fn is_template(token: &str) -> bool {
    token.starts_with("{{") && token.ends_with("}}")
}

/// One list, its templates filled in; `strict`: an invalid subject is an error rather than
/// dropped.
fn apply(
    list: &[String],
    strict: bool,
    user: &Claims<jwt::User>,
    account: &Claims<jwt::Account>,
) -> Result<Vec<String>, String> {
    if !list.iter().any(|s| s.split('.').any(is_template)) {
        return Ok(list.to_vec());
    }
    let mut emitted = Vec::with_capacity(list.len());
    for subject in list {
        // Each token: `Some(text)`, or `None` for a tag's place, filled from `values`.
        let mut tokens: Vec<Option<String>> = Vec::new();
        let mut values: Vec<Vec<String>> = Vec::new();
        for token in subject.split('.') {
            if !is_template(token) {
                tokens.push(Some(token.to_owned()));
                continue;
            }
            let op = token[2..token.len() - 2].to_ascii_lowercase();
            let tag = |prefix: &str, tags: &[String]| -> Vec<String> {
                let name = op[prefix.len()..op.len() - 1].to_owned();
                let want = format!("{name}:");
                tags.iter()
                    .filter_map(|t| t.strip_prefix(&want).map(str::to_owned))
                    .collect()
            };
            let filled = match op.as_str() {
                "name()" => Some(user.name.clone()),
                "subject()" => Some(user.sub.clone()),
                "account-name()" => Some(account.name.clone()),
                "account-subject()" => Some(user.nats.issuer_account.clone()),
                o if o.starts_with("account-tag(") && o.ends_with(')') => {
                    let found = tag("account-tag(", &account.nats.tags);
                    if found.is_empty() {
                        Some(String::new())
                    } else {
                        values.push(found);
                        None
                    }
                }
                o if o.starts_with("tag(") && o.ends_with(')') => {
                    let found = tag("tag(", &user.nats.tags);
                    if found.is_empty() {
                        Some(String::new())
                    } else {
                        values.push(found);
                        None
                    }
                }
                // Unknown: made invalid on purpose.
                _ => Some(" ".to_owned()),
            };
            tokens.push(filled);
        }
        for combination in product(&values) {
            let mut next = combination.iter();
            let subject: Vec<&str> = tokens
                .iter()
                .map(|t| match t {
                    Some(text) => text.as_str(),
                    None => next.next().map_or("", String::as_str),
                })
                .collect();
            let subject = subject.join(".");
            if is_valid(&subject) {
                emitted.push(subject);
            } else if strict {
                return Err("generated invalid subject".into());
            }
        }
    }
    Ok(emitted)
}

/// Every combination of one value from each list (the last list varying fastest); one empty
/// combination when there are no lists.
fn product(lists: &[Vec<String>]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = vec![Vec::new()];
    for list in lists {
        out = out
            .iter()
            .flat_map(|prefix| {
                list.iter().map(move |v| {
                    let mut c = prefix.clone();
                    c.push(v.clone());
                    c
                })
            })
            .collect();
    }
    out
}

/// nats-server's `IsValidSubject`: a subscription subject without white space.
fn is_valid(subject: &str) -> bool {
    crate::subjects::is_valid_subscription_subject(subject.as_bytes())
        && !subject.contains([' ', '\t', '\n', '\r', '\x0c'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims<N: serde::de::DeserializeOwned>(v: serde_json::Value) -> Claims<N> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn fills_names_keys_and_tags() {
        let user: Claims<jwt::User> = claims(json!({"sub": "UKEY", "name": "alice",
            "nats": {"issuer_account": "AKEY", "tags": ["dept:eng", "dept:ops", "x:y"]}}));
        let account: Claims<jwt::Account> =
            claims(json!({"sub": "AKEY", "name": "APP", "nats": {"tags": ["region:eu"]}}));
        let template: jwt::Permissions = serde_json::from_value(json!({
            "pub": {"allow": ["{{name()}}.>", "{{account-name()}}.{{subject()}}",
                              "d.{{tag(dept)}}.{{account-tag(region)}}", "n.{{tag(none)}}",
                              "bad.{{nonsense()}}"]},
            "sub": {"allow": ["{{account-subject()}}.in"], "deny": ["{{NAME()}}.secret"]}
        }))
        .unwrap();
        let p = expand(&template, &user, &account).unwrap();
        assert_eq!(
            p.publish.allow,
            ["alice.>", "APP.UKEY", "d.eng.eu", "d.ops.eu"]
        );
        assert_eq!(p.subscribe.allow, ["AKEY.in"]);
        assert_eq!(p.subscribe.deny, ["alice.secret"]);
        // Everything dropped from an allow list: deny all instead.
        let only_bad: jwt::Permissions =
            serde_json::from_value(json!({"sub": {"allow": ["{{tag(none)}}"]}})).unwrap();
        let p = expand(&only_bad, &user, &account).unwrap();
        assert!(p.subscribe.allow.is_empty());
        assert_eq!(p.subscribe.deny, [">"]);
        // An invalid deny refuses the user.
        let bad_deny: jwt::Permissions =
            serde_json::from_value(json!({"pub": {"deny": ["{{foo()}}"]}})).unwrap();
        assert!(expand(&bad_deny, &user, &account).is_err());
        // No template: unchanged.
        let plain: jwt::Permissions =
            serde_json::from_value(json!({"pub": {"allow": ["a.{b}"]}})).unwrap();
        assert_eq!(expand(&plain, &user, &account).unwrap(), plain);
    }
}
