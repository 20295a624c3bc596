#!/usr/bin/env bash
# Makes sure Debian's OpenSSH (server and client, ssh-keygen) is installed for the launcher's live
# tests (tests/ssh_live.rs), which start their own sshd on 127.0.0.1 with throw-away keys and
# never use the system's service. Idempotent: quick when present. Installs with apt-get only when
# run as root on a Debian-like machine; otherwise it says what is missing and exits non-zero, so
# the tests skip (or fail, when peers are required) with that reason.
set -euo pipefail

missing() {
  [ -x /usr/sbin/sshd ] && command -v ssh >/dev/null && command -v ssh-keygen >/dev/null && return 1
  return 0
}

if ! missing; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "install-sshd: installing openssh-server and openssh-client" >&2
  export DEBIAN_FRONTEND=noninteractive
  # A fresh machine may have no package lists yet.
  apt-get install -y --no-install-recommends openssh-server openssh-client >&2 \
    || { apt-get update >&2 && apt-get install -y --no-install-recommends openssh-server openssh-client >&2; }
  # The package's service is not what the tests use; a container may not run it at all.
  if command -v systemctl >/dev/null && systemctl is-active --quiet ssh 2>/dev/null; then
    echo "install-sshd: note: the system ssh service is running; the tests use their own daemon" >&2
  fi
fi
if missing; then
  echo "install-sshd: /usr/sbin/sshd, ssh or ssh-keygen is missing (install openssh-server and openssh-client)" >&2
  exit 1
fi
