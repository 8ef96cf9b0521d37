# Sourced by scripts/run and scripts/test (run from the project's top folder).
#
# venv_install REQUIREMENTS [PIP OPTIONS...]: make .venv when it is missing, then install
# REQUIREMENTS into it, unless the requirements files are what .venv last installed
# from that file (pip takes about two seconds to find that nothing is missing, on
# every start). Delete .venv/.installed-* to make it install again.
venv_install() {
  local requirements=$1
  shift
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
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "$@" -r "$requirements"
  printf '%s\n' "$digest" >"$stamp"
}
