# Sourced by scripts/run and scripts/test (run from the project's top folder).
#
# venv_install REQUIREMENTS compile|no-compile: make .venv when it is missing, then
# install REQUIREMENTS into it (with uv; with pip where uv fails), the libraries
# byte-compiled at install or not, unless the requirements files are what .venv last
# installed from that file: pip takes about two seconds to find that nothing is missing,
# on every start. Delete .venv/.installed-* to make it install again.
venv_install() {
  local requirements=$1 uv_compile=() pip_compile=()
  case $2 in
    compile) uv_compile=(--compile-bytecode) ;;
    no-compile) pip_compile=(--no-compile) ;;
    *) echo "venv_install: compile or no-compile, not '$2'" >&2; return 2 ;;
  esac
  local python=${PYTHON:-$(command -v python3.11 || command -v python3)}
  if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
  fi
  local stamp=".venv/.installed-$requirements" digest
  # every requirements file: one may include another (-r requirements.txt)
  digest=$(cat requirements*.txt | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then
    return 0
  fi
  # uv (pinned in requirements-bootstrap.txt) installs the pinned set in seconds where
  # pip takes most of a minute. pip stays the way that always works: uv reads none of
  # pip's configuration, so a machine whose packages come only from the indexes pip is
  # configured with installs through pip.
  if .venv/bin/python -m pip install --quiet --disable-pip-version-check \
    -r requirements-bootstrap.txt &&
    .venv/bin/uv pip install --quiet "${uv_compile[@]}" --python .venv/bin/python \
      -r "$requirements"; then
    :
  else
    echo "[venv] uv could not install $requirements: installing it with pip" >&2
    .venv/bin/python -m pip install --quiet --disable-pip-version-check \
      "${pip_compile[@]}" -r "$requirements"
  fi
  printf '%s\n' "$digest" >"$stamp"
}
