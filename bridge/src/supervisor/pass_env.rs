//! Opt-in pass-through groups: the variables a cloud provider's mode of a backend needs (Claude
//! Code on Amazon Bedrock or Google Vertex AI), which the default environment withholds. A group is
//! switched on by the operator (`--pass-env bedrock,vertex`, `CLAWBRIDGE_PASS_ENV`); every variable
//! in it is named (no prefix pattern), and its credentials are handed to the backend as secrets,
//! to pass deliberately and key into the session's auth fingerprint, never through `inherit`.

use std::ffi::OsString;

use super::EnvPolicy;

/// A group of variables passed on when the operator asks for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum PassEnvGroup {
    /// Claude Code on Amazon Bedrock (`CLAUDE_CODE_USE_BEDROCK=1`) and the AWS SDK's own settings.
    Bedrock,
    /// Claude Code on Google Vertex AI (`CLAUDE_CODE_USE_VERTEX=1`) and Google Cloud's own settings.
    Vertex,
}

/// Bedrock's settings, passed as they are: the switch, region, profile and config files, endpoints.
const BEDROCK_SETTINGS: &[&str] = &[
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_SKIP_BEDROCK_AUTH",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "ANTHROPIC_SMALL_FAST_MODEL_AWS_REGION",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CA_BUNDLE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_BEDROCK",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "AWS_ENDPOINT_URL_STS",
    "AWS_USE_FIPS_ENDPOINT",
    "AWS_USE_DUALSTACK_ENDPOINT",
];

/// Bedrock's credentials: an access key (its id names the account), a session token, an API key,
/// and the ECS/EKS container credentials' authorization token (or the file holding it).
const BEDROCK_CREDENTIALS: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
];

/// Vertex's settings, passed as they are: the switch, project, regions (one per model family: every
/// `VERTEX_REGION_*` name in the CLI 2.1.328 binary, `grep -ao 'VERTEX_REGION_[A-Z0-9_]*'`, less
/// the bare prefixes), endpoint and the gcloud configuration.
const VERTEX_SETTINGS: &[&str] = &[
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_SKIP_VERTEX_AUTH",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "ANTHROPIC_VERTEX_BASE_URL",
    "CLOUD_ML_REGION",
    "GOOGLE_CLOUD_PROJECT",
    "GCLOUD_PROJECT",
    "GOOGLE_CLOUD_QUOTA_PROJECT",
    "CLOUDSDK_CONFIG",
    "CLOUDSDK_ACTIVE_CONFIG_NAME",
    "VERTEX_REGION_CLAUDE_3_5_HAIKU",
    "VERTEX_REGION_CLAUDE_3_5_SONNET",
    "VERTEX_REGION_CLAUDE_3_7_SONNET",
    "VERTEX_REGION_CLAUDE_4_0_OPUS",
    "VERTEX_REGION_CLAUDE_4_0_SONNET",
    "VERTEX_REGION_CLAUDE_4_1_OPUS",
    "VERTEX_REGION_CLAUDE_4_5_OPUS",
    "VERTEX_REGION_CLAUDE_4_5_SONNET",
    "VERTEX_REGION_CLAUDE_4_6_OPUS",
    "VERTEX_REGION_CLAUDE_4_6_SONNET",
    "VERTEX_REGION_CLAUDE_4_7_OPUS",
    "VERTEX_REGION_CLAUDE_4_8_OPUS",
    "VERTEX_REGION_CLAUDE_5_5_OPUS",
    "VERTEX_REGION_CLAUDE_5_5_SONNET",
    "VERTEX_REGION_CLAUDE_5_OPUS",
    "VERTEX_REGION_CLAUDE_5_SONNET",
    "VERTEX_REGION_CLAUDE_FABLE_5",
    "VERTEX_REGION_CLAUDE_FABLE_5_1",
    "VERTEX_REGION_CLAUDE_FABLE_5_2",
    "VERTEX_REGION_CLAUDE_HAIKU_4_5",
    "VERTEX_REGION_CLAUDE_HAIKU_5_5",
];

/// Vertex's credentials: the service-account key file (its path picks the account) and an access
/// token given directly.
const VERTEX_CREDENTIALS: &[&str] = &["GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_AUTH_ACCESS_TOKEN"];

impl PassEnvGroup {
    /// Every group, in the order help text lists them.
    pub const ALL: &'static [PassEnvGroup] = &[PassEnvGroup::Bedrock, PassEnvGroup::Vertex];

    /// The group's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            PassEnvGroup::Bedrock => "bedrock",
            PassEnvGroup::Vertex => "vertex",
        }
    }

    /// The group's variables passed as they are.
    pub fn settings(self) -> &'static [&'static str] {
        match self {
            PassEnvGroup::Bedrock => BEDROCK_SETTINGS,
            PassEnvGroup::Vertex => VERTEX_SETTINGS,
        }
    }

    /// The group's credentials: passed only as secrets, and keyed into the auth fingerprint.
    pub fn credentials(self) -> &'static [&'static str] {
        match self {
            PassEnvGroup::Bedrock => BEDROCK_CREDENTIALS,
            PassEnvGroup::Vertex => VERTEX_CREDENTIALS,
        }
    }

    /// The groups named in a comma-separated list (`bedrock,vertex`; blanks ignored, each once).
    pub fn parse_list(list: &str) -> Result<Vec<PassEnvGroup>, UnknownPassEnvGroup> {
        let mut groups = Vec::new();
        for name in list.split(',').map(str::trim).filter(|name| !name.is_empty()) {
            let group = name.parse()?;
            if !groups.contains(&group) {
                groups.push(group);
            }
        }
        Ok(groups)
    }
}

impl std::str::FromStr for PassEnvGroup {
    type Err = UnknownPassEnvGroup;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        PassEnvGroup::ALL
            .iter()
            .copied()
            .find(|group| group.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| UnknownPassEnvGroup { name: name.to_owned() })
    }
}

impl std::fmt::Display for PassEnvGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A pass-through group name that is not one of [`PassEnvGroup::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown environment group {name:?} (known: bedrock, vertex)")]
pub struct UnknownPassEnvGroup {
    /// The name given.
    pub name: String,
}

impl EnvPolicy {
    /// Opens `groups` in this policy: their settings are inherited, their credentials stay
    /// withheld from inheritance and are returned instead — those of them set (non-empty) in
    /// `parent`, as `(name, value)` — for the backend to pass as secrets and key into its auth
    /// fingerprint.
    pub fn pass_groups(
        &mut self,
        groups: &[PassEnvGroup],
        parent: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(String, String)> {
        for group in groups {
            self.inherit.extend(group.settings().iter().map(|name| (*name).to_owned()));
            self.withhold.extend(group.credentials().iter().map(|name| (*name).to_owned()));
        }
        let wanted = |name: &str| groups.iter().any(|group| group.credentials().contains(&name));
        let mut credentials: Vec<(String, String)> = parent
            .into_iter()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
            .filter(|(name, value)| !value.is_empty() && wanted(name))
            .collect();
        credentials.sort();
        credentials
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn parent(secret: &str) -> Vec<(OsString, OsString)> {
        [
            ("PATH", "/bin"),
            ("AWS_REGION", "eu-west-1"),
            ("AWS_SECRET_ACCESS_KEY", secret),
            ("AWS_ACCESS_KEY_ID", "AKIACANARY"),
            ("AWS_CANARY_UNLISTED", "canary"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "/keys/sa.json"),
            ("CLOUD_ML_REGION", "us-east5"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
    }

    /// The child's environment as a backend builds it: the policy, plus the credentials it was
    /// handed, set deliberately.
    fn child(groups: &[PassEnvGroup], secret: &str) -> (std::collections::BTreeMap<OsString, OsString>, Vec<String>) {
        let mut policy = EnvPolicy::default();
        let credentials = policy.pass_groups(groups, parent(secret));
        let names = credentials.iter().map(|(name, _)| name.clone()).collect();
        for (name, value) in credentials {
            policy.set.push((name.into(), value.into()));
        }
        (policy.build(parent(secret)), names)
    }

    #[test]
    fn without_a_group_no_cloud_variable_reaches_the_child() {
        let (env, credentials) = child(&[], "canary-secret");
        assert!(credentials.is_empty());
        for name in ["AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_REGION", "GOOGLE_APPLICATION_CREDENTIALS"] {
            assert!(!env.contains_key(OsStr::new(name)), "{name} passed: {env:?}");
        }
    }

    #[test]
    fn a_group_passes_its_named_settings_and_hands_over_its_credentials_and_nothing_else() {
        let (env, credentials) = child(&[PassEnvGroup::Bedrock], "canary-secret");
        assert_eq!(credentials, ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]);
        assert_eq!(env.get(OsStr::new("AWS_SECRET_ACCESS_KEY")).unwrap(), "canary-secret");
        assert_eq!(env.get(OsStr::new("AWS_REGION")).unwrap(), "eu-west-1");
        assert!(!env.contains_key(OsStr::new("AWS_CANARY_UNLISTED")), "no AWS_* pattern: {env:?}");
        assert!(!env.contains_key(OsStr::new("CLOUD_ML_REGION")), "vertex is not open");

        // A credential is never inherited, even with a group open: only what the backend sets passes.
        let mut policy = EnvPolicy::default();
        let _ = policy.pass_groups(&[PassEnvGroup::Bedrock, PassEnvGroup::Vertex], parent("canary-secret"));
        let inherited = policy.build(parent("canary-secret"));
        assert!(!inherited.contains_key(OsStr::new("AWS_SECRET_ACCESS_KEY")), "{inherited:?}");
        assert!(!inherited.contains_key(OsStr::new("GOOGLE_APPLICATION_CREDENTIALS")), "{inherited:?}");
        assert_eq!(inherited.get(OsStr::new("CLOUD_ML_REGION")).unwrap(), "us-east5");
    }

    #[test]
    fn group_lists_parse_by_name_and_refuse_unknown_names() {
        assert_eq!(
            PassEnvGroup::parse_list(" bedrock, Vertex,,bedrock"),
            Ok(vec![PassEnvGroup::Bedrock, PassEnvGroup::Vertex])
        );
        assert_eq!(PassEnvGroup::parse_list(""), Ok(vec![]));
        let unknown = PassEnvGroup::parse_list("bedrock,aws*").unwrap_err();
        assert_eq!(unknown.name, "aws*");
        assert!(unknown.to_string().contains("known: bedrock, vertex"), "{unknown}");
    }

    #[test]
    fn every_listed_name_is_spelled_out_and_in_one_list_only() {
        let mut seen = std::collections::HashSet::new();
        for group in PassEnvGroup::ALL {
            for name in group.settings().iter().chain(group.credentials()) {
                assert!(!name.contains('*'), "no patterns: {name}");
                assert!(seen.insert(*name), "{name} listed twice");
            }
        }
    }

    /// Every `VERTEX_REGION_CLAUDE_<model>` name the pinned CLI reads (its binary holds them as
    /// strings), read in chunks that overlap by more than a name's length.
    fn vertex_region_names_in(binary: &std::path::Path) -> std::collections::BTreeSet<String> {
        use std::io::Read;
        let names = regex::bytes::Regex::new("VERTEX_REGION_CLAUDE_[A-Z0-9_]+").unwrap();
        let mut file = std::fs::File::open(binary).unwrap();
        let (mut found, mut window, mut chunk) = (std::collections::BTreeSet::new(), Vec::new(), vec![0u8; 8 << 20]);
        loop {
            let n = file.read(&mut chunk).unwrap();
            window.extend_from_slice(&chunk[..n]);
            // A name running into the window's end may go on in the next read: taken from there.
            for name in names.find_iter(&window).filter(|m| n == 0 || m.end() < window.len()) {
                found.insert(String::from_utf8_lossy(name.as_bytes()).into_owned());
            }
            if n == 0 {
                break;
            }
            let keep = window.len().saturating_sub(256);
            window.drain(..keep);
        }
        // The bare prefix `VERTEX_REGION_CLAUDE_` + a suffix built at run time is not a name.
        found.retain(|name| !name.ends_with('_'));
        found
    }

    #[test]
    fn the_vertex_regions_are_exactly_those_the_pinned_claude_cli_reads() {
        let Some(claude) = clawbridge_fixtures::peers::peer_or_skip("claude") else { return };
        let listed: std::collections::BTreeSet<String> = VERTEX_SETTINGS
            .iter()
            .filter(|name| name.starts_with("VERTEX_REGION_CLAUDE_"))
            .map(|name| (*name).to_owned())
            .collect();
        assert_eq!(listed, vertex_region_names_in(&claude));
    }
}
