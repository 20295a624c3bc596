//! Every setting clawbridge reads, one area (one file section) each. A key's flag, environment
//! variables and default live here and nowhere else; a later area (e.g. `[telemetry]`) is one more
//! `settings_area!` plus a line in `settings_root!` (mod.rs).

use std::path::PathBuf;

use super::declare::settings_area;
use clawbridge_adapters::claude::pool::PoolConfig;

use super::value::{
    CgroupsSetting, CodexServerSetting, ConnectUrl, LauncherWords, LogFilter, PassEnvList, Program, WsAuthMode,
};
use clawbridge_adapters::codex::shared::ServerMode;

/// `run.backend`'s default: the demo needs no peers.
pub const DEFAULT_RUN_BACKEND: &str = "demo";
/// `reap.grace-ms`'s default.
pub const DEFAULT_REAP_GRACE_MS: u64 = 2000;

settings_area! {
    /// Where the bridge keeps its state and what it passes to every agent.
    "bridge" => BridgeSettings, BridgeFile, BridgeFlags {
        /// Where clawbridge keeps its state: sessions, pid registry, bindings, logs.
        state_dir: PathBuf,
        flag Some("--state-dir"),
        env ["CLAWBRIDGE_STATE_DIR"],
        default Some(super::default_state_dir()),
        shown "$XDG_STATE_HOME/clawbridge, else ~/.local/state/clawbridge";
        /// Environment groups passed to the agents besides the defaults: bedrock, vertex.
        pass_env: PassEnvList,
        flag Some("--pass-env"),
        env ["CLAWBRIDGE_PASS_ENV"],
        default Some(PassEnvList::default());
    }
}

settings_area! {
    /// What the bridge logs.
    "logs" => LogSettings, LogFile, LogFlags {
        /// The log filter (tracing's EnvFilter syntax, e.g. `debug` or `warn,clawbridge=debug`).
        filter: LogFilter,
        flag None,
        env ["CLAWBRIDGE_LOG", "RUST_LOG"],
        default Some(LogFilter(super::DEFAULT_LOG_FILTER.to_string()));
    }
}

settings_area! {
    /// The Codex backend.
    "codex" => CodexSettings, CodexFile, CodexFlags {
        /// The `codex` executable (a path, or a name on PATH).
        bin: Program,
        flag None,
        env ["CLAWBRIDGE_CODEX_BIN"],
        default None,
        shown "codex on PATH";
        /// Codex's home (its config, login and threads), given to every app-server.
        home: PathBuf,
        flag None,
        env ["CODEX_HOME"],
        default None,
        shown "codex's own (~/.codex)";
        /// A listening `codex app-server --listen …` to connect to instead of spawning one: unix:///path, ws://host:port or wss://host:port; or proxy / proxy:///path: a running daemon reached through `codex app-server proxy [--sock path]`, run through `launcher` when one is set.
        connect: ConnectUrl,
        flag Some("--connect"),
        env ["CLAWBRIDGE_CODEX_CONNECT"],
        default None,
        shown "none (a new app-server per attempt)";
        /// How the WebSocket server at `connect` authenticates us, as its --ws-auth says: capability-token or signed-bearer-token.
        ws_auth: WsAuthMode,
        flag None,
        env [],
        default None,
        shown "none (no Authorization header)";
        /// The file holding the capability token (or, for signed-bearer-token, the shared secret).
        ws_token_file: PathBuf,
        flag None,
        env [],
        default None,
        shown "none";
        /// The name of an environment variable holding the token or secret, instead of ws-token-file.
        ws_token_env: String,
        flag None,
        env [],
        default None,
        shown "none";
        /// The issuer (`iss`) of signed bearer tokens, when the server checks one (--ws-issuer).
        ws_issuer: String,
        flag None,
        env [],
        default None,
        shown "none";
        /// The audience (`aud`) of signed bearer tokens, when the server checks one (--ws-audience).
        ws_audience: String,
        flag None,
        env [],
        default None,
        shown "none";
        /// Whether attempts share warm app-servers (many threads on one process) or each start their own: shared or per-attempt.
        server: CodexServerSetting,
        flag None,
        env ["CLAWBRIDGE_CODEX_SERVER"],
        default Some(CodexServerSetting::Shared);
        /// Most shared app-servers alive at once (one per distinct launch setting); one more retires the least recently used.
        max_servers: u64,
        flag None,
        env [],
        default Some(u64::try_from(ServerMode::DEFAULT_LIMITS.max_items).unwrap_or(u64::MAX));
        /// How long a shared app-server may serve no session before it is stopped, in milliseconds.
        server_idle_ms: u64,
        flag None,
        env [],
        default Some(u64::try_from(ServerMode::DEFAULT_LIMITS.idle_timeout.as_millis()).unwrap_or(u64::MAX));
        /// Turns a shared app-server runs before it is retired (it stops once its sessions end; 0: never).
        max_turns_per_server: u64,
        flag None,
        env [],
        default ServerMode::DEFAULT_LIMITS.max_uses;
        /// Runs the app-server elsewhere through this command (`ssh -T host`, `docker exec -i ctr`); `bin` then names codex there (docs/remote.md).
        launcher: LauncherWords,
        flag Some("--launcher"),
        env ["CLAWBRIDGE_CODEX_LAUNCHER"],
        default None,
        shown "none (runs here)";
    }
}

settings_area! {
    /// The Claude Code backend.
    "claude" => ClaudeSettings, ClaudeFile, ClaudeFlags {
        /// The `claude` executable (a path, or a name on PATH).
        bin: Program,
        flag None,
        env ["CLAWBRIDGE_CLAUDE_BIN"],
        default None,
        shown "claude on PATH";
        /// Runs the CLI elsewhere through this command (`ssh -T host`, `docker exec -i ctr`); `bin` then names claude there (docs/remote.md).
        launcher: LauncherWords,
        flag Some("--launcher"),
        env ["CLAWBRIDGE_CLAUDE_LAUNCHER"],
        default None,
        shown "none (runs here)";
        /// Most Claude CLIs kept warm between turns at once; parking one more stops the least recently used.
        warm_max: u64,
        flag None,
        env [],
        default Some(u64::try_from(PoolConfig::default().max_warm).unwrap_or(u64::MAX));
        /// How long a warm Claude CLI may sit unused before it is stopped, in milliseconds.
        warm_idle_ms: u64,
        flag None,
        env [],
        default Some(u64::try_from(PoolConfig::default().idle_timeout.as_millis()).unwrap_or(u64::MAX));
    }
}

settings_area! {
    /// Deadlines on the native agents.
    "agents" => AgentSettings, AgentFile, AgentFlags {
        /// How long a turn may go without progress before the bridge ends it, in milliseconds (0: each backend's own).
        turn_idle_timeout_ms: u64,
        flag None,
        env ["CLAWBRIDGE_TURN_IDLE_TIMEOUT_MS"],
        default None,
        shown "each backend's own (300000 for codex and claude)";
        /// How long a write to an agent's stdin may make no progress, in milliseconds (0: the default).
        write_timeout_ms: u64,
        flag None,
        env ["CLAWBRIDGE_WRITE_TIMEOUT_MS"],
        default Some(clawbridge_bridge::transport::DEFAULT_WRITE_TIMEOUT.as_secs() * 1000);
    }
}

settings_area! {
    /// The host protocol server (`clawbridge serve`).
    "serve" => ServeSettings, ServeFile, ServeFlags {
        /// The bytes the running attempts' inputs may hold together.
        input_budget_bytes: u64,
        flag None,
        env ["CLAWBRIDGE_SERVE_INPUT_BUDGET_BYTES"],
        default Some(clawbridge_protocol::host::limits::ATTEMPT_INPUT_BUDGET_BYTES as u64);
    }
}

settings_area! {
    /// How agents' descendants are kept track of.
    "containment" => ContainmentSettings, ContainmentFile, ContainmentFlags {
        /// Whether each agent gets a cgroup of its own where the machine allows it: auto or off.
        cgroups: CgroupsSetting,
        flag None,
        env ["CLAWBRIDGE_CGROUPS"],
        default Some(CgroupsSetting::Auto);
    }
}

settings_area! {
    /// The ACP backend: any Agent Client Protocol agent.
    "acp" => AcpSettings, AcpFile, AcpFlags {
        /// The ACP agent's command line, split as a shell would (e.g. `npx -y some-agent --acp`).
        agent: String,
        flag Some("--agent"),
        env ["CLAWBRIDGE_ACP_AGENT"],
        default None,
        shown "none (no acp backend)";
        /// Variables of the bridge's environment the ACP agent also sees, comma-separated (`run --agent-env NAME` adds to them).
        agent_env: String,
        flag None,
        env ["CLAWBRIDGE_ACP_AGENT_ENV"],
        default None,
        shown "none";
        /// The auth method id to `authenticate` with when the ACP agent requires a login.
        auth_method: String,
        flag None,
        env ["CLAWBRIDGE_ACP_AUTH_METHOD"],
        default None,
        shown "none (never authenticates)";
        /// Runs the ACP agent's command line elsewhere through this command (`ssh -T host`, `kubectl exec -i pod --`) (docs/remote.md).
        launcher: LauncherWords,
        flag Some("--launcher"),
        env ["CLAWBRIDGE_ACP_LAUNCHER"],
        default None,
        shown "none (runs here)";
    }
}

settings_area! {
    /// `clawbridge run`.
    "run" => RunSettings, RunFile, RunFlags {
        /// The backend `run` uses: demo, codex, claude or acp.
        backend: String,
        flag Some("--backend"),
        env [],
        default Some(DEFAULT_RUN_BACKEND.to_string());
    }
}

settings_area! {
    /// `clawbridge reap`.
    "reap" => ReapSettings, ReapFile, ReapFlags {
        /// How long an orphan gets after SIGTERM before SIGKILL, in milliseconds.
        grace_ms: u64,
        flag Some("--grace-ms"),
        env [],
        default Some(DEFAULT_REAP_GRACE_MS);
    }
}
