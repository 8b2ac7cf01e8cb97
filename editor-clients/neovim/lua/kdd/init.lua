-- kdd for Neovim (0.10+): starts `kdd lsp` for *.kernel.toml buffers and adds kdd's views on its
-- custom requests: :KddAsm, :KddIR [pass], :KddPasses, :KddDiff pass, :KddCheck, :KddJump, :KddLens.
-- Views are scratch splits that follow every edit (refreshed on the server's kdd/compiled notification),
-- and so do the code lenses; the knowledge stays in kdd, this plugin only places what it answers.
-- See :help kdd (doc/kdd.txt).
local linemap = require("kdd.linemap")
local pressure = require("kdd.pressure")

local M = {
  config = {},
  state = {}, -- config buffer -> {compiled, checked, passes}
  views = {}, -- config buffer -> kind ("asm", "ir", "diff", "passes") -> {buf, pass, entries}
}

local uv = vim.uv or vim.loop

local function request(client, method, params, handler, bufnr)
  if vim.fn.has("nvim-0.11") == 1 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

local function client_for(buf)
  return vim.lsp.get_clients({ name = "kdd", bufnr = buf })[1]
end

local function root_of(path)
  local found = vim.fs.find({ ".venv", ".git", "pyproject.toml" }, { upward = true, path = vim.fs.dirname(path) })[1]
  return found and vim.fs.dirname(found) or vim.fs.dirname(path)
end

--- The server command: the `cmd` option, else the workspace's .venv/bin/kdd, else kdd on PATH.
function M.server_cmd(root)
  if M.config.cmd then return M.config.cmd end
  local venv = root .. "/.venv/bin/kdd"
  if uv.fs_stat(venv) then return { venv, "lsp" } end
  return { "kdd", "lsp" }
end

--- Why a server command cannot start (its program is not an executable), or nil when it can.
function M.missing(cmd, root)
  if vim.fn.executable(cmd[1]) == 1 then return nil end
  local tried = M.config.cmd and ("the `cmd` setting (%s)"):format(cmd[1])
    or ("%s/.venv/bin/kdd and `kdd` on PATH"):format(root)
  return ("kdd: cannot start the language server: no executable kdd (tried %s). Install kdd (its README), or "
    .. "point the plugin at it: require('kdd').setup({ cmd = { '/path/to/kdd', 'lsp' } }); see :help kdd-cmd"):format(tried)
end

local function is_config(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  return name:match("%.kernel%.toml$") ~= nil and not name:match("^kdd://") -- views are named after their config
end

--- The config buffer a command is about: the current one (or `cur`), or the one that view belongs to.
local function source_buf(cur)
  cur = cur or vim.api.nvim_get_current_buf()
  if is_config(cur) then return cur end
  local src = vim.b[cur].kdd_source
  if src and vim.api.nvim_buf_is_valid(src) then return src end
  error("kdd: not a *.kernel.toml buffer or one of its views", 0)
end

-- ---- status ----------------------------------------------------------------

local VERDICT_MARK = { ok = "check ✓", wrong = "check ✗", ["not-checkable"] = "check n/a", error = "check error" }

--- A check's verdict: the result's `verdict` (ok | wrong | not-checkable) where it has one, else from `ok`
--- ("error" for a check that could not run).
function M.verdict(result)
  if type(result.verdict) == "string" then return result.verdict end
  if result.ok then return "ok" end
  return result.failure and "error" or "wrong"
end

--- One status line (the same as server/view/static/model.js statusText): target, the code generator's
--- register figure with its source (the IR model only where no code generator ran), compile time, and the
--- verdict of `checked` ({version, result}, a kdd/checked notification) while it is about `version`, the
--- text's current version; after an edit "compiling…" and the check pending ("check …").
function M.status_text(compiled, checked, version)
  if M.unavailable then return M.unavailable end
  if not compiled then return "kdd: compiling…" end
  local current = version or compiled.version
  local stale = type(current) == "number" and type(compiled.version) == "number" and compiled.version < current
  if not compiled.ok then
    return "kdd: " .. (type(compiled.error) == "string" and compiled.error:match("[^\n]*") or "compile failed")
      .. (stale and " · compiling…" or "")
  end
  local parts = { compiled.target }
  local r = compiled.registers or {}
  if type(r.estimate) == "number" and type(r.budget) == "number" then
    parts[#parts + 1] = ("regs %d/%d %s"):format(r.estimate, r.budget, type(r.source) == "string" and r.source or "IR model")
  end
  if type(compiled.compile_ms) == "number" then parts[#parts + 1] = ("%d ms"):format(math.floor(compiled.compile_ms + 0.5)) end
  if checked and checked.result then
    if type(checked.version) == "number" and checked.version ~= current then
      parts[#parts + 1] = "check …"
    else
      local v = M.verdict(checked.result)
      parts[#parts + 1] = VERDICT_MARK[v] or ("check " .. v)
    end
  end
  if stale then parts[#parts + 1] = "compiling…" end
  return "kdd " .. table.concat(parts, " · ")
end

--- The LSP version of a buffer's text (what kdd/compiled and kdd/checked name).
local function text_version(buf)
  return vim.lsp.util.buf_versions[buf]
end

--- For 'statusline': %{v:lua.require'kdd'.status()} (about the window being drawn)
function M.status()
  local win = vim.g.statusline_winid or 0
  local ok, src = pcall(source_buf, vim.api.nvim_win_get_buf(win))
  if not ok then return "" end
  local s = M.state[src] or {}
  return M.status_text(s.compiled, s.checked, text_version(src))
end

local function update_status(buf)
  local s = M.state[buf] or {}
  vim.b[buf].kdd_status = M.status_text(s.compiled, s.checked, text_version(buf))
  vim.cmd.redrawstatus({ bang = true })
end

-- ---- views -------------------------------------------------------------------

local function view_buf(src, kind)
  M.views[src] = M.views[src] or {}
  local v = M.views[src][kind]
  if v and vim.api.nvim_buf_is_valid(v.buf) then return v end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.api.nvim_buf_set_name(buf, ("kdd://%s/%s"):format(kind, vim.fn.fnamemodify(vim.api.nvim_buf_get_name(src), ":t")))
  vim.b[buf].kdd_source = src
  vim.b[buf].kdd_kind = kind
  vim.keymap.set("n", "<CR>", M.jump, { buffer = buf, desc = "kdd: to the config line of this line" })
  if kind == "asm" then
    vim.keymap.set("n", "K", M.instruction_doc, { buffer = buf, desc = "kdd: this instruction's docs and live buffers" })
  end
  v = { buf = buf }
  M.views[src][kind] = v
  return v
end

local function set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
end

--- The window showing buf in this tab; opens a split beside the config (and returns there) if none.
local function show(buf)
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then return win end
  end
  local back = vim.api.nvim_get_current_win()
  vim.cmd("rightbelow vsplit")
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  vim.wo[win].signcolumn = "yes"
  vim.wo[win].wrap = false
  vim.api.nvim_set_current_win(back)
  return win
end

local function message_lines(prefix, message)
  local out = {}
  for line in (prefix .. tostring(message)):gmatch("[^\n]+") do out[#out + 1] = line end
  return out
end

M.LIVE_WIDTH = 30 -- columns of the live-buffer column beside the assembly view

--- The buffers live on each assembly line, those holding the most registers first, in a column of their
--- own: a narrow window right of the assembly view, scrolled with it line for line (scrollbind,
--- cursorbind), so no instruction hides them and they hide no instruction.
local function live_column(v, live)
  if not v.live_buf or not vim.api.nvim_buf_is_valid(v.live_buf) then
    v.live_buf = vim.api.nvim_create_buf(false, true)
    vim.bo[v.live_buf].bufhidden = "hide"
    vim.api.nvim_buf_set_name(v.live_buf, (vim.api.nvim_buf_get_name(v.buf):gsub("^kdd://asm/", "kdd://live/")))
  end
  set_lines(v.live_buf, #live > 0 and live or { "" })
  local asm_win = vim.fn.bufwinid(v.buf)
  if asm_win == -1 or vim.fn.bufwinid(v.live_buf) ~= -1 then return end
  local back = vim.api.nvim_get_current_win()
  vim.api.nvim_set_current_win(asm_win)
  vim.cmd(("rightbelow %dvsplit"):format(M.LIVE_WIDTH))
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, v.live_buf)
  for _, w in ipairs({ asm_win, win }) do
    vim.wo[w].scrollbind, vim.wo[w].cursorbind, vim.wo[w].wrap = true, true, false
  end
  vim.wo[win].winfixwidth, vim.wo[win].number, vim.wo[win].signcolumn = true, false, "no"
  vim.api.nvim_win_set_cursor(win, vim.api.nvim_win_get_cursor(asm_win))
  vim.api.nvim_set_current_win(back)
end

local renderers = {}

function renderers.ir(src, v, done)
  request(client_for(src), "kdd/irAfterPass", { textDocument = { uri = vim.uri_from_bufnr(src) }, pass = v.pass },
    function(err, result)
      if err or not result.ok then
        v.entries = nil
        set_lines(v.buf, message_lines("IR unavailable: ", err and err.message or result.error))
      else
        v.entries = result.lines
        set_lines(v.buf, vim.split(result.text, "\n", { plain = true }))
      end
      done()
    end, src)
end

function renderers.diff(src, v, done)
  request(client_for(src), "kdd/irAfterPass",
    { textDocument = { uri = vim.uri_from_bufnr(src) }, pass = v.pass, diff = true }, function(err, result)
      if err or not result.ok then
        set_lines(v.buf, message_lines("diff unavailable: ", err and err.message or result.error))
      else
        set_lines(v.buf, vim.split(result.diff, "\n", { plain = true }))
      end
      vim.bo[v.buf].filetype = "diff"
      done()
    end, src)
end

function renderers.passes(src, v, done)
  request(client_for(src), "kdd/passes", { textDocument = { uri = vim.uri_from_bufnr(src) } }, function(err, result)
    if err or not result.ok then
      set_lines(v.buf, message_lines("passes unavailable: ", err and err.message or result.error))
    else
      local lines = { ("%-18s %-9s %7s %9s"):format("pass", "", "nodes", "ms"), ("%-18s %-9s %7d"):format("build", "", result.build.nodes) }
      for _, p in ipairs(result.passes) do
        lines[#lines + 1] = ("%-18s %-9s %7d %9.2f%s"):format(p.name, p.changed and "changed" or "unchanged", p.nodes, p.ms,
          p.cached and "  cached" or "")
      end
      set_lines(v.buf, lines)
    end
    done()
  end, src)
end

function renderers.asm(src, v, done)
  request(client_for(src), "kdd/assembly", { textDocument = { uri = vim.uri_from_bufnr(src) } }, function(err, result)
    local listing = not err and pressure.listing(result) or nil
    if not listing then
      -- no assembly (e.g. no code generator for the target yet): the server's reason, as it says it
      v.entries = nil
      if v.live_buf and vim.api.nvim_buf_is_valid(v.live_buf) then set_lines(v.live_buf, { "" }) end
      set_lines(v.buf, message_lines("Assembly unavailable: ", err and err.message or "no listing"))
      vim.api.nvim_buf_clear_namespace(v.buf, pressure.ns, 0, -1)
      vim.api.nvim_buf_clear_namespace(src, pressure.ns, 0, -1)
    else
      v.entries = listing.lines
      set_lines(v.buf, vim.split(listing.text, "\n", { plain = true }))
      local budget = listing.registers.budget
      local marks = {}
      local ranked = pressure.live_ranked(listing)
      local live = {}
      for i, l in ipairs(listing.lines) do
        if l.live_regs then marks[#marks + 1] = { line = i - 1, regs = l.live_regs } end
        live[i] = table.concat(ranked[i - 1] or {}, " ")
      end
      pressure.place(v.buf, marks, budget, true)
      live_column(v, live)
      local config_marks = {}
      for line, regs in pairs(pressure.config_pressure(listing)) do config_marks[#config_marks + 1] = { line = line, regs = regs } end
      pressure.place(src, config_marks, budget)
    end
    done()
  end, src)
end


--- K in the assembly view: the instruction's description, operands and pipe, and the buffers live there
--- (kdd/asmHover), in a floating window.
function M.instruction_doc()
  local cur = vim.api.nvim_get_current_buf()
  local src = source_buf(cur)
  local line = vim.api.nvim_win_get_cursor(0)[1] - 1
  request(client_for(src), "kdd/asmHover", { textDocument = { uri = vim.uri_from_bufnr(src) }, line = line },
    function(err, result)
      local text = err and ("kdd: " .. err.message) or (result and result ~= vim.NIL and result.markdown)
        or "kdd: no instruction on this line"
      M.last_doc = text
      vim.lsp.util.open_floating_preview(vim.split(text, "\n", { plain = true }), "markdown",
        { border = "rounded", focus_id = "kdd-instruction" })
    end, src)
end

--- Re-render a view (after an edit compiled, or when it opens); `on_done` runs once it is filled.
function M.refresh(src, kind, on_done)
  local v = M.views[src] and M.views[src][kind]
  if not v or not vim.api.nvim_buf_is_valid(v.buf) or not client_for(src) then return end
  v.pending = (v.pending or 0) + 1
  renderers[kind](src, v, function()
    v.pending = v.pending - 1
    v.version = (M.state[src] and M.state[src].compiled or {}).version
    if on_done then on_done() end
  end)
end

local function open(kind, pass)
  local src = source_buf()
  local v = view_buf(src, kind)
  v.pass = pass or v.pass
  show(v.buf)
  M.refresh(src, kind)
  return v
end

-- ---- jumps between a config and its views ------------------------------------

local jump_ns = vim.api.nvim_create_namespace("kdd-jump")

--- From a view line to the config characters it came from; from a config line to the view lines that
--- came from it (the assembly view first, else the IR view), highlighted.
function M.jump()
  local cur = vim.api.nvim_get_current_buf()
  local line = vim.api.nvim_win_get_cursor(0)[1]
  local src = vim.b[cur].kdd_source
  if src then
    local v = M.views[src][vim.b[cur].kdd_kind]
    local range = v and v.entries and linemap.range_of(v.entries[line])
    if not range then
      vim.notify("kdd: this line has no config origin", vim.log.levels.INFO)
      return
    end
    local win = show(src)
    vim.api.nvim_set_current_win(win)
    vim.api.nvim_win_set_cursor(win, { range.start.line + 1, range.start.character })
    return
  end
  for _, kind in ipairs({ "asm", "ir" }) do
    local v = M.views[cur] and M.views[cur][kind]
    if v and v.entries and vim.api.nvim_buf_is_valid(v.buf) then
      local hits = linemap.entries_for(v.entries, line - 1)
      if #hits > 0 then
        vim.api.nvim_buf_clear_namespace(v.buf, jump_ns, 0, -1)
        for _, i in ipairs(hits) do
          vim.api.nvim_buf_set_extmark(v.buf, jump_ns, i - 1, 0, { line_hl_group = "Visual" })
        end
        local win = show(v.buf)
        vim.api.nvim_set_current_win(win)
        vim.api.nvim_win_set_cursor(win, { hits[1], 0 })
        return
      end
    end
  end
  vim.notify("kdd: no open view has lines from this config line", vim.log.levels.INFO)
end

-- ---- the server's notifications -----------------------------------------------

local function on_compiled(_, params)
  local buf = vim.uri_to_bufnr(params.uri)
  M.state[buf] = M.state[buf] or {}
  M.state[buf].compiled = params
  update_status(buf)
  if params.ok and client_for(buf) then
    request(client_for(buf), "kdd/passes", { textDocument = { uri = params.uri } }, function(err, result)
      if not err and result.ok then M.state[buf].passes = result.passes end
    end, buf)
  end
  for kind in pairs(M.views[buf] or {}) do M.refresh(buf, kind) end
  if not params.ok then -- no heat of an older text beside a config that does not compile
    vim.api.nvim_buf_clear_namespace(buf, pressure.ns, 0, -1)
  end
  vim.lsp.codelens.refresh({ bufnr = buf }) -- Neovim 0.10 does not take the server's codeLens/refresh
  -- Neovim 0.10 takes the server's inlayHint/refresh but does not redraw the lines it already drew for that
  -- text version, so the register hint would keep the pre-compile floor; turning the hints off and on
  -- draws the compile's figure.
  if vim.fn.has("nvim-0.11") == 0 and vim.lsp.inlay_hint.is_enabled({ bufnr = buf }) then
    vim.lsp.inlay_hint.enable(false, { bufnr = buf })
    vim.lsp.inlay_hint.enable(true, { bufnr = buf })
  end
  vim.api.nvim_exec_autocmds("User", { pattern = "KddCompiled", data = params, modeline = false })
end

local function on_checked(_, params)
  local buf = vim.uri_to_bufnr(params.uri)
  M.state[buf] = M.state[buf] or {}
  M.state[buf].checked = params
  update_status(buf)
  local r = params.result
  local v = M.verdict(r)
  vim.notify(v == "ok" and ("kdd check passed (rel_err %s)"):format(tostring(r.rel_err))
    or ("kdd check %s: "):format(v == "wrong" and "failed" or v)
      .. (r.error or ("rel_err %s > tol %s"):format(tostring(r.rel_err), tostring(r.tol))),
    v == "ok" and vim.log.levels.INFO or vim.log.levels.ERROR)
end

-- The lenses' view commands run here (vim.lsp.commands); kdd.runCheck goes to the server.
local function lens_command(kind, pass_index)
  return function(command, ctx)
    local src = ctx.bufnr
    local v = view_buf(src, kind)
    v.pass = pass_index and command.arguments[pass_index] or v.pass or (kind == "ir" and "final" or nil)
    show(v.buf)
    M.refresh(src, kind)
  end
end

--- Start (or reuse) the server for a config buffer; when kdd cannot be found, say so (once) and how to
--- point the plugin at it, and show that in the status line instead of "compiling…".
function M.attach(buf)
  local path = vim.api.nvim_buf_get_name(buf)
  local root = root_of(path)
  local cmd = M.server_cmd(root)
  local missing = M.missing(cmd, root)
  if missing then
    if M.unavailable == nil then vim.notify(missing, vim.log.levels.ERROR) end
    M.unavailable = "kdd: not found (set cmd, :help kdd-cmd)"
    vim.b[buf].kdd_status = M.unavailable
    return nil
  end
  M.unavailable = nil
  return vim.lsp.start({
    name = "kdd",
    cmd = cmd,
    root_dir = root,
    settings = { kdd = M.config.settings or {} },
    init_options = M.config.settings or {},
    handlers = { ["kdd/compiled"] = on_compiled, ["kdd/checked"] = on_checked },
    on_attach = function(_, bufnr)
      if vim.lsp.inlay_hint and M.config.inlay_hints ~= false then vim.lsp.inlay_hint.enable(true, { bufnr = bufnr }) end
      if M.config.code_lens ~= false then vim.lsp.codelens.refresh({ bufnr = bufnr }) end
    end,
  }, { bufnr = buf })
end

-- ---- commands ----------------------------------------------------------------

local function pass_names(changed_only)
  local ok, src = pcall(source_buf)
  local passes = ok and M.state[src] and M.state[src].passes or {}
  local names = changed_only and {} or { "build" }
  for _, p in ipairs(passes) do
    if p.changed or not changed_only then names[#names + 1] = p.name end
  end
  if not changed_only then names[#names + 1] = "final" end
  return names
end

local function completer(changed_only)
  return function(lead)
    return vim.tbl_filter(function(n) return vim.startswith(n, lead) end, pass_names(changed_only))
  end
end

function M.check()
  local src = source_buf()
  request(client_for(src), "kdd/check", { textDocument = { uri = vim.uri_from_bufnr(src) } }, function(err)
    if err then vim.notify("kdd check: " .. err.message, vim.log.levels.ERROR) end
  end, src) -- the verdict arrives as kdd/checked
end

--- require("kdd").setup{cmd = {...}, settings = {target, timeLimit, checkOnSave}, inlay_hints = true,
--- code_lens = true}
function M.setup(opts)
  M.config = opts or {}
  M.unavailable = nil
  pressure.define_highlights()
  vim.lsp.commands["kdd.showAssembly"] = lens_command("asm")
  vim.lsp.commands["kdd.showIR"] = lens_command("ir", 2)
  vim.lsp.commands["kdd.showDiff"] = lens_command("diff", 2)
  local group = vim.api.nvim_create_augroup("kdd", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group, pattern = "*.kernel.toml", callback = function(ev) M.attach(ev.buf) end,
  })
  -- an edit: the status says the compile runs and the check of the older text is pending
  vim.api.nvim_create_autocmd({ "TextChanged", "TextChangedI" }, {
    group = group, pattern = "*.kernel.toml", callback = function(ev)
      if M.state[ev.buf] then vim.schedule(function() update_status(ev.buf) end) end
    end,
  })
  local cmd = vim.api.nvim_create_user_command
  cmd("KddAsm", function() open("asm") end, { desc = "kdd: assembly with live registers, following edits" })
  cmd("KddIR", function(a) open("ir", a.args ~= "" and a.args or "final") end,
    { nargs = "?", complete = completer(false), desc = "kdd: the IR after a pass (default final)" })
  cmd("KddPasses", function() open("passes") end, { desc = "kdd: the pass table" })
  cmd("KddDiff", function(a) open("diff", a.args) end,
    { nargs = 1, complete = completer(true), desc = "kdd: what a pass changed" })
  cmd("KddCheck", M.check, { desc = "kdd: run the correctness check now" })
  cmd("KddJump", M.jump, { desc = "kdd: between a config line and its IR/assembly lines" })
  cmd("KddLens", function() vim.lsp.codelens.run() end, { desc = "kdd: run the code lens of this line" })
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and is_config(buf) then M.attach(buf) end
  end
end

return M
