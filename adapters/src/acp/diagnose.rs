//! `clawbridge doctor` for the ACP backend: the agent's `initialize` (its name, version and the
//! protocol version it speaks) and whether a login it offers is configured.

use std::path::Path;
use std::sync::Arc;

use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools, NoObserver};
use clawbridge_bridge::diagnose::{Check, Diagnostics, Limits};
use clawbridge_protocol::acp::PROTOCOL_VERSION;
use futures::future::BoxFuture;

use super::backend::AcpBackend;
use super::config::{AGENT_ENV, AUTH_METHOD_ENV};
use super::session::{AcpSession, describe_agent};

impl Diagnostics for AcpBackend {
    fn program_variable(&self) -> Option<&'static str> {
        Some(AGENT_ENV)
    }

    fn program_source(&self) -> Option<String> {
        Some(format!("from the configured command line in {}", self.agent_named_by()))
    }

    fn check_names(&self) -> &'static [&'static str] {
        &["handshake", "auth"]
    }

    fn install_hint(&self) -> String {
        format!("name an installed ACP agent's command line in {AGENT_ENV} (or acp.agent in the config file)")
    }

    fn checks<'a>(&'a self, program: &'a Path, limits: Limits) -> BoxFuture<'a, Vec<Check>> {
        Box::pin(async move {
            let mut config = self.config_for(program.to_path_buf(), std::env::temp_dir());
            config.handshake_timeout = limits.handshake;
            let hooks = SessionHooks {
                approver: Arc::new(FixedApprover(ApprovalDecision::Deny { message: None })),
                tools: Arc::new(NoHostTools),
                observer: Arc::new(NoObserver),
            };
            let session = match AcpSession::connect(config.clone(), hooks, false).await {
                Ok(session) => session,
                Err(error) => {
                    let fix = format!("check that `{}` speaks ACP v{PROTOCOL_VERSION} on stdio", program.display());
                    return vec![
                        Check::handshake_failure(&error, "agent", fix),
                        Check::skipped("auth", "the handshake failed"),
                    ];
                }
            };
            let agent = describe_agent(session.agent_info.as_ref());
            let offered = session.auth_methods().to_vec();
            session.shutdown().await;
            let handshake =
                Check::ok("handshake", format!("{agent} answered initialize (protocol version {PROTOCOL_VERSION})"));
            let auth = match (&config.auth_method, offered.is_empty()) {
                (_, true) => Check::ok("auth", "the agent offers no auth methods: it needs no login from the bridge"),
                (Some(wanted), false) if offered.contains(wanted) => {
                    Check::ok("auth", format!("offers [{}]; {wanted} is configured", offered.join(", ")))
                }
                (Some(wanted), false) => Check::fail(
                    "auth",
                    format!(
                        "{AUTH_METHOD_ENV} names `{wanted}`, which the agent does not offer ([{}])",
                        offered.join(", ")
                    ),
                    format!("set {AUTH_METHOD_ENV} (acp.auth-method) to one of [{}]", offered.join(", ")),
                ),
                (None, false) => Check::warn(
                    "auth",
                    format!(
                        "offers [{}] and none is configured: a session fails if the agent requires a login",
                        offered.join(", ")
                    ),
                    Some(format!(
                        "set {AUTH_METHOD_ENV} (acp.auth-method) to one of them, or give the agent its own credentials (--agent-env)"
                    )),
                ),
            };
            vec![handshake, auth]
        })
    }
}
