//! The checks on `attempt/run`'s `processEnv` (the environment OpenClaw prepared for the run's
//! native processes, docs/host-protocol.md#attemptrun): bounded, and only names a process
//! environment can hold, so nothing the host sends can break or bloat a spawn.

use std::collections::BTreeMap;

use clawbridge_bridge::supervisor::LOADER_INJECTION;

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
}
