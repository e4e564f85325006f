# apt_common.sh - sourced by scripts/setup.sh and scripts/setup_fuzz.sh: collect the Debian
# packages that are missing, then install them at once as root (or with sudo -n), or print
# the one apt-get line to run.
#   have CMD              CMD is on PATH
#   need PACKAGE          add PACKAGE to $missing (once)
#   install_missing WHO   install $missing; WHO names the script in its messages
have() { command -v "$1" >/dev/null 2>&1; }
missing=""
need() { case " $missing " in *" $1 "*) ;; *) missing="$missing $1" ;; esac; }
install_missing() {
  [ -n "$missing" ] || return 0
  if [ "$(id -u)" = 0 ]; then
    SUDO=""
  elif have sudo && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    echo "$1: missing packages; install them as root: apt-get install -y --no-install-recommends$missing" >&2
    exit 1
  fi
  echo "$1: installing$missing"
  $SUDO apt-get update
  # shellcheck disable=SC2086
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
}
