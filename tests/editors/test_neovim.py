"""The Neovim plugin in a real headless Neovim 0.10 (Debian trixie's, unpacked by tools/setup_editors.sh)
against the real ``kdd lsp``: tests/editors/nvim/session.lua runs every command and asserts what it shows."""
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from editor_tools import EXAMPLES, KDD, NEOVIM, SCREENSHOTS, need, nvim_cmd, nvim_env, nvim_parsers

# The editor clients' own tests (node, Neovim, chromium): the whole suite's, not make test-fast's.
pytestmark = pytest.mark.slow

SESSION = Path(__file__).resolve().parent / "nvim" / "session.lua"


def test_plugin_session(tmp_path):
    config = tmp_path / "resnet.kernel.toml"
    shutil.copy(EXAMPLES / "resnet50_3x3.kernel.toml", config)
    out = subprocess.run([*nvim_cmd(), "--headless", "--clean", *nvim_parsers(), "--cmd", f"set rtp^={NEOVIM}",
                          "-l", str(SESSION),
                          str(config), KDD, str(tmp_path / "cache")],
                         capture_output=True, text=True, timeout=600, env={**nvim_env(), "HOME": str(tmp_path)})
    report = out.stdout + out.stderr
    assert out.returncode == 0 and "ALL OK" in out.stdout, report
    for step in ("KddPasses", "KddDiff", "KddIR final", "KddAsm", "KddJump both ways", "inlay hints", "live refresh",
                 "KddCheck", "lenses", "K in the assembly", "K on the config", "check pending after an edit", "code action",
                 "kdd not found", "heat without termguicolors"):
        assert f"ok {step}" in out.stdout, report


def test_tmux_capture(tmp_path):
    """The plugin in a terminal (tmux): the config, its IR and the assembly pane, as a user sees them.
    With KDD_SCREENSHOTS set, the captured screen is kept there for docs/editors.md."""
    tmux = need("tmux")
    config = tmp_path / "resnet.kernel.toml"
    shutil.copy(EXAMPLES / "resnet50_3x3.kernel.toml", config)
    init = tmp_path / "init.lua"
    init.write_text(f'vim.opt.rtp:prepend("{NEOVIM}")\nvim.o.laststatus = 2\n'
                    f'vim.o.statusline = "%f %= %{{v:lua.require\'kdd\'.status()}}"\n'
                    f'require("kdd").setup({{ cmd = {{ "{KDD}", "lsp", "--cache-dir", "{tmp_path / "cache"}" }} }})\n'
                    'vim.api.nvim_create_autocmd("User", { pattern = "KddCompiled", once = true, callback = function()\n'
                    '  vim.cmd("KddIR final") vim.cmd("KddAsm") end })\n')
    env = {**nvim_env(), "HOME": str(tmp_path), "TERM": "xterm-256color"}
    # The editor runs headless and tmux shows its terminal UI attached with --remote-ui: run through its
    # own loader, Neovim's TUI cannot re-start itself as an embedded server (its program path is the loader).
    server = str(tmp_path / "nvim.sock")
    editor = subprocess.Popen([*nvim_cmd(), "--headless", "--listen", server, "--clean", *nvim_parsers(), "-u", str(init),
                               str(config)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    socket = str(tmp_path / "tmux.sock")
    try:
        for _ in range(100):
            if Path(server).exists():
                break
            time.sleep(0.1)
        ui = " ".join(f"'{c}'" for c in [*nvim_cmd(), "--remote-ui", "--server", server])
        subprocess.run([tmux, "-S", socket, "new-session", "-d", "-x", "200", "-y", "40", ui], env=env, check=True)
        screen = ""
        for _ in range(600):
            screen = subprocess.run([tmux, "-S", socket, "capture-pane", "-p"], capture_output=True, text=True).stdout
            asm_shown = "Assembly unavailable" in screen or "│▌" in screen  # the reason, or lines with heat signs
            # the compile's register hint (the server asked for fresh hints), the lenses, the live column
            settled = ("by the" in screen and "Run check" in screen
                       and re.search(r"c_acc [^│]*kernel", screen) is not None)
            if "kernel {" in screen and "kdd xehpg" in screen and asm_shown and settled:
                break
            time.sleep(0.2)
        assert "kernel {" in screen and "kdd xehpg" in screen and "allocator" in screen, screen
        if SCREENSHOTS:
            (Path(SCREENSHOTS) / "neovim.txt").write_text(screen.rstrip() + "\n")
    finally:
        subprocess.run([tmux, "-S", socket, "kill-server"], capture_output=True)
        editor.kill()
        editor.wait(10)
