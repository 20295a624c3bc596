//! The checks on what `attempt/run` hands a native process's environment
//! (docs/host-protocol.md#attemptrun): `processEnv` (the environment OpenClaw prepared for the
//! run's native processes) and `auth` (the route's endpoint, key and headers). Both are bounded and
//! hold only what an environment variable can carry, so nothing the host sends can break, bloat or
//! smuggle extra lines into a spawn.

use std::collections::BTreeMap;

use clawbridge_bridge::supervisor::LOADER_INJECTION;
use clawbridge_protocol::host::RouteAuth;

/// The most variables one attempt may set.
pub const MAX_VARS: usize = 256;
/// The longest variable name.
pub const MAX_NAME: usize = 256;
/// The longest value, in bytes.
pub const MAX_VALUE: usize = 32 * 1024;

/// `Err` names the first variable that cannot be set, and why.
pub fn check(env: &BTreeMap<String, String>) -> Result<(), String> {
    if env.len() > MAX_VARS {
        return Err(format!("sets {} variables, more than {MAX_VARS}", env.len()));
    }
    for (name, value) in env {
        let mut chars = name.chars();
        let well_formed = name.len() <= MAX_NAME
            && chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !well_formed {
            return Err(format!("names a variable {:?} that is not an environment variable name", truncated(name)));
        }
        if LOADER_INJECTION.iter().any(|pattern| matches(pattern, name)) {
            return Err(format!("sets {name}, which injects code into every process it starts"));
        }
        if value.len() > MAX_VALUE {
            return Err(format!("gives {name} a value of {} bytes, more than {MAX_VALUE}", value.len()));
        }
        if value.contains('\0') {
            return Err(format!("gives {name} a value with a NUL byte"));
        }
    }
    Ok(())
}

/// The most headers a route may add.
pub const MAX_HEADERS: usize = 64;
/// The longest header name, endpoint or key.
pub const MAX_AUTH_FIELD: usize = 4096;

/// `Err` names what of the route's auth cannot reach a native process, and why. Header names and
/// values become lines of one variable (`Name: value`), so neither may hold a line break.
pub fn check_route_auth(auth: &RouteAuth) -> Result<(), String> {
    if auth.headers.len() > MAX_HEADERS {
        return Err(format!("adds {} headers, more than {MAX_HEADERS}", auth.headers.len()));
    }
    let fields = [("the endpoint", auth.base_url.as_deref()), ("the key", auth.api_key.as_deref())];
    for (what, value) in fields {
        if let Some(value) = value {
            if value.len() > MAX_AUTH_FIELD || value.contains(['\0', '\r', '\n']) {
                return Err(format!("gives {what} more than {MAX_AUTH_FIELD} bytes or a line break or NUL"));
            }
        }
    }
    for (name, value) in &auth.headers {
        let name_ok = !name.is_empty() && name.len() <= MAX_AUTH_FIELD && !name.contains([':', '\0', '\r', '\n']);
        if !name_ok {
            return Err(format!("adds a header named {:?}, which is not a header name", truncated(name)));
        }
        if value.len() > MAX_VALUE || value.contains(['\0', '\r', '\n']) {
            return Err(format!("gives header {} more than {MAX_VALUE} bytes or a line break or NUL", truncated(name)));
        }
    }
    Ok(())
}

/// Whether `name` is `pattern` or, for a `PREFIX*` pattern, starts with the prefix.
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// At most 64 characters of `name`, for a message.
fn truncated(name: &str) -> String {
    name.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect()
    }

    #[test]
    fn names_values_and_counts_are_bounded() {
        assert!(check(&env(&[("GH_TOKEN", ""), ("GIT_AUTHOR_NAME", "A Person"), ("_X1", "v")])).is_ok());
        assert!(check(&BTreeMap::new()).is_ok());
        for bad in ["", "1ABC", "A-B", "A=B", "A B", "É"] {
            assert!(check(&env(&[(bad, "v")])).is_err(), "{bad:?}");
        }
        assert!(check(&env(&[(&"A".repeat(MAX_NAME + 1), "v")])).is_err());
        assert!(check(&env(&[("A", "x\0y")])).is_err());
        for injected in ["LD_PRELOAD", "DYLD_INSERT_LIBRARIES", "NODE_OPTIONS"] {
            assert!(check(&env(&[(injected, "x")])).unwrap_err().contains("injects code"), "{injected}");
        }
        assert!(check(&env(&[("A", &"x".repeat(MAX_VALUE + 1))])).is_err());
        assert!(check(&env(&[("A", &"x".repeat(MAX_VALUE))])).is_ok());
        let many: BTreeMap<String, String> = (0..=MAX_VARS).map(|i| (format!("V{i}"), String::new())).collect();
        assert!(check(&many).unwrap_err().contains("more than 256"));
    }

    #[test]
    fn route_auth_is_bounded_and_holds_no_line_breaks() {
        let auth = |base: &str, header: (&str, &str)| RouteAuth {
            base_url: Some(base.into()),
            api_key: Some("sk-x".into()),
            headers: [(header.0.to_string(), header.1.to_string())].into_iter().collect(),
        };
        assert_eq!(check_route_auth(&auth("https://api.example", ("X-Team", "a"))), Ok(()));
        assert!(
            check_route_auth(&auth("https://api.example", ("X-Team", "a\nX-Admin: yes")))
                .unwrap_err()
                .contains("X-Team")
        );
        assert!(check_route_auth(&auth("https://api.example", ("X: Y", "a"))).is_err());
        assert!(check_route_auth(&auth("https://api.example\r\n", ("X-Team", "a"))).unwrap_err().contains("endpoint"));
        let many = RouteAuth {
            headers: (0..=MAX_HEADERS).map(|i| (format!("X-{i}"), "v".into())).collect(),
            ..RouteAuth::default()
        };
        assert!(check_route_auth(&many).unwrap_err().contains("headers"));
    }
}
