#!/usr/bin/env bash
# unpack_debs SUITE ROOT PACKAGE...: Debian packages of another suite (trixie, sid) downloaded and unpacked
# into ROOT (ROOT/debs keeps the .deb files), without installing anything or touching the machine's apt
# state: a private source list (the machine's first Debian entry with the suite changed) and private lists
# (../shared/reference/neovim-0.10.md). Programs from ROOT run through ROOT's own loader and libraries.
unpack_debs() {
  local suite=$1 root=$2 work O f
  shift 2
  work=$(mktemp -d)
  mkdir -p "$work/lists/partial" "$root/debs"
  awk 'BEGIN{RS="";ORS="\n\n"} NR==1' /etc/apt/sources.list.d/debian.sources \
    | sed "s/^Suites:.*/Suites: $suite/" > "$work/$suite.sources"
  O="-o Dir::Etc::SourceList=$work/$suite.sources -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists=$work/lists"
  [ "$(id -u)" = 0 ] && O="$O -o APT::Sandbox::User=root"  # root: no _apt sandbox warning
  # shellcheck disable=SC2086
  apt-get $O update -q >/dev/null
  # shellcheck disable=SC2086
  (cd "$root/debs" && apt-get $O download "$@" >/dev/null 2>&1)
  for f in "$root"/debs/*.deb; do dpkg -x "$f" "$root"; done
  rm -rf "$work"
}
