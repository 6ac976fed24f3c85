#!/usr/bin/env bash
# Every Debian package streamband's real backends and their tests need, installed as root,
# only what is missing. `make test` and `.ci/run` both call this script, so what CI
# installs and what README's commands install cannot drift.
#
#   scripts/system-packages.sh            install what is missing (as root); without
#                                         root, one line: what stays missing, which
#                                         tests are skipped for it, how to get them
#   scripts/system-packages.sh --missing  list the missing packages, one a line; installs
#                                         nothing (any user)
set -euo pipefail

# Mininet and Open vSwitch (userspace datapath), iperf3, ethtool, ping: the testbed, and
# everything that runs on it (Storm, the manager service's stage, Swift)
TESTBED=(mininet openvswitch-switch iperf3 ethtool iputils-ping)
# OpenStack Swift (paper 002): its servers, rsync replication, memcached for tempauth
SWIFT=(swift swift-proxy swift-object swift-account swift-container python3-swiftclient
       rsync memcached)
# Storm and Kafka run from Maven Central's jars on Java 17; Maven builds streamband's jars
JAVA=(openjdk-17-jdk-headless maven)
# the manager's dashboard in headless Chromium (Playwright drives it, never a downloaded
# browser) and its /metrics scraped by Prometheus
WEB=(chromium prometheus)
PACKAGES=("${TESTBED[@]}" "${SWIFT[@]}" "${JAVA[@]}" "${WEB[@]}")

installed() {
  [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

missing=()
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done

# whether any of the packages given is missing
lacks() {
  local p
  for p in "$@"; do
    case " ${missing[*]} " in *" $p "*) return 0;; esac
  done
  return 1
}

if [ "${1:-}" = "--missing" ]; then
  [ "${#missing[@]}" -eq 0 ] || printf '%s\n' "${missing[@]}"
  exit 0
fi
if [ "$#" -gt 0 ]; then
  echo "usage: $0 [--missing]" >&2
  exit 2
fi

if [ "$(id -u)" -ne 0 ]; then
  # which tests skip, by what they lack; the testbed's need root whatever is installed
  skipped="the testbed, Storm-on-testbed, Swift and manager-service tests (they need root)"
  if lacks "${JAVA[@]}"; then skipped="$skipped, the Storm and Kafka tests (no Java 17, Maven)"; fi
  if lacks "${WEB[@]}"; then skipped="$skipped, the dashboard and Prometheus tests"; fi
  echo "system packages: not root${missing[*]:+, missing ${missing[*]}}: skipping $skipped;" \
       "to run them: sudo make test (or sudo bash scripts/system-packages.sh, then make test)"
  exit 0
fi

if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Debian's prometheus package starts a system service; the tests start their own
if installed prometheus; then
  systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
