-- kdd for Neovim (0.10+): starts `kdd lsp` for *.kernel.toml buffers and adds kdd's views on its
-- custom requests: :KddAsm, :KddIR [pass], :KddPasses, :KddDiff pass, :KddCheck, :KddJump. Views are
-- scratch splits that follow every edit (refreshed on the server's kdd/compiled notification); the
-- knowledge stays in kdd, this plugin only places what it answers.
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

--- One status line: target, peak/budget registers, compile time, the check's verdict.
function M.status_text(compiled, checked)
  if not compiled then return "kdd: compiling…" end
  if not compiled.ok then
    return "kdd: " .. (type(compiled.error) == "string" and compiled.error:match("[^\n]*") or "compile failed")
  end
  local parts = { compiled.target }
  local r = compiled.registers or {}
  local peak = type(r.peak) == "number" and r.peak or r.ir
  if type(peak) == "number" and type(r.budget) == "number" then parts[#parts + 1] = ("regs %d/%d"):format(peak, r.budget) end
  if type(compiled.compile_ms) == "number" then parts[#parts + 1] = ("%d ms"):format(math.floor(compiled.compile_ms + 0.5)) end
  if checked then parts[#parts + 1] = checked.ok and "check ✓" or "check ✗" end
  return "kdd " .. table.concat(parts, " · ")
end

--- For 'statusline': %{v:lua.require'kdd'.status()} (about the window being drawn)
function M.status()
  local win = vim.g.statusline_winid or 0
  local ok, src = pcall(source_buf, vim.api.nvim_win_get_buf(win))
  if not ok then return "" end
  local s = M.state[src] or {}
  return M.status_text(s.compiled, s.checked)
end

local function update_status(buf)
  local s = M.state[buf] or {}
  vim.b[buf].kdd_status = M.status_text(s.compiled, s.checked)
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
      set_lines(v.buf, message_lines("Assembly unavailable: ", err and err.message or "no listing"))
      vim.api.nvim_buf_clear_namespace(v.buf, pressure.ns, 0, -1)
      vim.api.nvim_buf_clear_namespace(src, pressure.ns, 0, -1)
    else
      v.entries = listing.lines
      set_lines(v.buf, vim.split(listing.text, "\n", { plain = true }))
      local budget = listing.registers.budget
      local marks = {}
      for i, l in ipairs(listing.lines) do
        if l.live_regs then marks[#marks + 1] = { line = i - 1, regs = l.live_regs, live = l.live } end
      end
      pressure.place(v.buf, marks, budget, true)
      local config_marks = {}
      for line, regs in pairs(pressure.config_pressure(listing)) do config_marks[#config_marks + 1] = { line = line, regs = regs } end
      pressure.place(src, config_marks, budget)
    end
    done()
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
  vim.api.nvim_exec_autocmds("User", { pattern = "KddCompiled", data = params, modeline = false })
end

local function on_checked(_, params)
  local buf = vim.uri_to_bufnr(params.uri)
  M.state[buf] = M.state[buf] or {}
  M.state[buf].checked = params.result
  update_status(buf)
  local r = params.result
  vim.notify(r.ok and ("kdd check passed (rel_err %s)"):format(tostring(r.rel_err))
    or ("kdd check failed: " .. (r.error or ("rel_err %s > tol %s"):format(tostring(r.rel_err), tostring(r.tol)))),
    r.ok and vim.log.levels.INFO or vim.log.levels.ERROR)
end

--- Start (or reuse) the server for a config buffer.
function M.attach(buf)
  local path = vim.api.nvim_buf_get_name(buf)
  local root = root_of(path)
  return vim.lsp.start({
    name = "kdd",
    cmd = M.server_cmd(root),
    root_dir = root,
    settings = { kdd = M.config.settings or {} },
    init_options = M.config.settings or {},
    handlers = { ["kdd/compiled"] = on_compiled, ["kdd/checked"] = on_checked },
    on_attach = function(_, bufnr)
      if vim.lsp.inlay_hint and M.config.inlay_hints ~= false then vim.lsp.inlay_hint.enable(true, { bufnr = bufnr }) end
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

--- require("kdd").setup{cmd = {...}, settings = {target, timeLimit, checkOnSave}, inlay_hints = true}
function M.setup(opts)
  M.config = opts or {}
  pressure.define_highlights()
  local group = vim.api.nvim_create_augroup("kdd", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group, pattern = "*.kernel.toml", callback = function(ev) M.attach(ev.buf) end,
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
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and is_config(buf) then M.attach(buf) end
  end
end

return M
