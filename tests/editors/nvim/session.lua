-- A headless Neovim 0.10 session with the kdd plugin against the real `kdd lsp` (run by
-- tests/editors/test_neovim.py): every view command, pass completion, jumps both ways, live refresh,
-- inlay hints, the check, and the register marks. Any failed check raises, and nvim -l exits non-zero.
local CONFIG, KDD, CACHE = _G.arg[1], _G.arg[2], _G.arg[3]
local kdd = require("kdd")
kdd.setup({ cmd = { KDD, "lsp", "--cache-dir", CACHE }, settings = { checkOnSave = true } })

local function say(...) io.stdout:write(table.concat({ ... }, " ") .. "\n") end
local function wait(what, pred, ms)
  if not vim.wait(ms or 120000, pred, 50) then error("timed out waiting for " .. what, 0) end
end
local function eq(a, b, what)
  if not vim.deep_equal(a, b) then error(("%s: expected %s, got %s"):format(what, vim.inspect(b), vim.inspect(a)), 0) end
end
local function lines(buf) return vim.api.nvim_buf_get_lines(buf, 0, -1, false) end
local function view(kind) return kdd.views[vim.fn.bufnr(CONFIG)][kind] end
local function filled(kind) return function() local v = view(kind); return v and v.version ~= nil and (v.pending or 0) == 0 end end

vim.cmd.edit(CONFIG)
local src = vim.api.nvim_get_current_buf()
wait("kdd/compiled", function() local s = kdd.state[src]; return s and s.compiled and s.passes end)
local opened = kdd.state[src].compiled.version -- Neovim counts versions from 0
assert(kdd.state[src].compiled.ok, "the example compiles")
local regs = kdd.state[src].compiled.registers
-- one register figure: the allocator's, named (not the IR model's)
local shown = vim.b[src].kdd_status:match("^kdd xehpg · regs (%d+)/%d+ allocator · %d+ ms$")
eq(tonumber(shown), regs.allocated, "status " .. vim.b[src].kdd_status)
say("ok status", vim.b[src].kdd_status)

-- passes and their completion
local passes = kdd.state[src].passes
local changed, all = {}, { "build" }
for _, p in ipairs(passes) do
  all[#all + 1] = p.name
  if p.changed then changed[#changed + 1] = p.name end
end
all[#all + 1] = "final"
eq(vim.fn.getcompletion("KddIR ", "cmdline"), all, "KddIR completion")
eq(vim.fn.getcompletion("KddDiff ", "cmdline"), changed, "KddDiff completion (changed passes only)")
say("ok completion", #all, "passes,", #changed, "changed")

vim.cmd("KddPasses")
wait("passes view", filled("passes"))
local table_text = table.concat(lines(view("passes").buf), "\n")
for _, p in ipairs(passes) do assert(table_text:find(p.name, 1, true), "pass table lists " .. p.name) end
say("ok KddPasses")

vim.cmd("KddDiff " .. changed[1])
wait("diff view", filled("diff"))
eq(lines(view("diff").buf)[1], "--- before " .. changed[1], "diff header")
say("ok KddDiff", changed[1])

vim.cmd("KddIR final")
wait("IR view", filled("ir"))
local ir = view("ir")
eq(lines(ir.buf)[1], "kernel {", "IR text")
assert(#ir.entries == #lines(ir.buf) - 1 or #ir.entries == #lines(ir.buf), "one line-map entry per IR line")
eq(vim.api.nvim_eval_statusline("%{v:lua.require'kdd'.status()}", { winid = vim.fn.bufwinid(ir.buf), maxwidth = 200 }).str,
  vim.b[src].kdd_status, "a view's status line is its config's")
say("ok KddIR final", #lines(ir.buf), "lines")

vim.cmd("KddAsm")
wait("asm view", filled("asm"))
local asm = view("asm")
local asm_lines = lines(asm.buf)
local marks = vim.api.nvim_buf_get_extmarks(asm.buf, require("kdd.pressure").ns, 0, -1, { details = true })
if asm.entries then
  local with_regs = vim.tbl_filter(function(l) return l.live_regs ~= nil end, asm.entries)
  local counts = vim.tbl_filter(function(m) return m[4].sign_text ~= nil end, marks)
  eq(#counts, #with_regs, "one register mark per line")
  eq(vim.trim(counts[1][4].virt_text[1][1]), tostring(with_regs[1].live_regs), "live registers of the first line")
  -- the live buffers: a column of their own beside the assembly, line for line, scrolled with it
  local live_win = vim.fn.bufwinid(asm.live_buf)
  assert(live_win ~= -1 and vim.wo[live_win].scrollbind and vim.wo[vim.fn.bufwinid(asm.buf)].scrollbind, "live column")
  eq(#lines(asm.live_buf), #asm.entries, "one live line per assembly line")
  say("ok KddAsm", #asm_lines, "lines with live registers")

  -- K on a dpas line: the instruction's docs and live buffers in a floating window
  local at
  for i, l in ipairs(asm.entries) do
    if l.text:find("dpas", 1, true) then at = i; break end
  end
  vim.api.nvim_set_current_win(vim.fn.bufwinid(asm.buf))
  vim.api.nvim_win_set_cursor(0, { at, 0 })
  kdd.last_doc = nil
  vim.api.nvim_feedkeys("K", "x", false)
  wait("the instruction docs", function() return kdd.last_doc ~= nil end)
  assert(kdd.last_doc:find("**`dpas`**", 1, true) and kdd.last_doc:find("pipe: xmx", 1, true), kdd.last_doc)
  local float
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(w).relative ~= "" then float = w end
  end
  assert(float, "a floating window")
  local shown_doc = table.concat(lines(vim.api.nvim_win_get_buf(float)), "\n")
  assert(shown_doc:find("systolic", 1, true) and shown_doc:find("live: ", 1, true), shown_doc)
  -- the live column's order is the hover's: the buffers holding the most registers first
  local column = lines(asm.live_buf)[at]
  local hover_live = kdd.last_doc:match("live: ([^\n]*)")
  local names = {}
  for label in (hover_live .. ", "):gmatch("(.-) [%d.]+, ") do names[#names + 1] = label end
  eq(column:sub(1, #table.concat(names, " ", 1, 3)), table.concat(names, " ", 1, 3), "live column order")
  vim.api.nvim_win_close(float, true)
  say("ok K in the assembly view:", kdd.last_doc:match("^[^\n]*"))
else
  assert(asm_lines[1]:match("^Assembly unavailable: .+"), "the server's reason: " .. asm_lines[1])
  eq(#marks, 0, "no register marks without assembly")
  say("ok KddAsm:", asm_lines[1])
end

-- register marks (sign heat and virtual text) from a listing as kdd's compile nests it
local pressure = require("kdd.pressure")
local range = function(a) return { start = { line = a, character = 0 }, ["end"] = { line = a, character = 3 } } end
local listing = pressure.listing({ ok = true, asm = { asm = "a\nb\nc", registers = { budget = 128 }, lines = {
  { text = "a", live_regs = 40, live = { "c" }, config_range = range(17) },
  { text = "b", live_regs = 120, live = { "c", "a" }, config_range = range(17) },
  { text = "c", live_regs = 130, live = { "c" }, config_range = range(19) } } } })
eq(pressure.config_pressure(listing), { [17] = 120, [19] = 130 }, "config pressure")
local scratch = vim.api.nvim_create_buf(false, true)
vim.api.nvim_buf_set_lines(scratch, 0, -1, false, { "a", "b", "c" })
pressure.place(scratch, { { line = 1, regs = 120 }, { line = 2, regs = 130 } }, 128)
local placed = vim.api.nvim_buf_get_extmarks(scratch, pressure.ns, 0, -1, { details = true })
eq(#placed, 2, "marks placed: heat and count per line")
eq(placed[1][4].sign_hl_group, "KddHeat3", "heat of 120/128")
eq(placed[1][4].virt_text[1][1], "120/128 regs", "virtual text")
eq(placed[2][4].sign_hl_group, "KddHeat4", "heat over the budget")
-- live buffers ranked by the registers they hold on each line (the allocations' bytes)
local ranked = pressure.live_ranked({ lines = { {}, {}, {} }, registers = { allocations = {
  { label = "b", bytes = 64, first_line = 0, last_line = 2 }, { label = "c_acc", bytes = 256, first_line = 1, last_line = 2 },
  { label = "a", bytes = 64, first_line = 1, last_line = 1 } } } })
eq({ ranked[0], ranked[1], ranked[2] }, { { "b" }, { "c_acc", "a", "b" }, { "c_acc", "b" } }, "live ranked")
pressure.place(scratch, { { line = 0, regs = 7 } }, 128, true)
placed = vim.api.nvim_buf_get_extmarks(scratch, pressure.ns, 0, -1, { details = true })
eq({ #placed, placed[1][4].virt_text[1][1], placed[1][4].virt_text_pos }, { 1, "   7 ", "inline" }, "count column")
say("ok register marks")

-- jumps: IR line -> config range; config line -> its IR lines
local index
for i, e in ipairs(ir.entries) do
  if e.origin and e.origin.range then index = i; break end
end
local target = ir.entries[index].origin.range.start
vim.api.nvim_set_current_win(vim.fn.bufwinid(ir.buf))
vim.api.nvim_win_set_cursor(0, { index, 0 })
vim.cmd("KddJump")
eq(vim.api.nvim_get_current_buf(), src, "jumped to the config")
eq(vim.api.nvim_win_get_cursor(0), { target.line + 1, target.character }, "config position")
local linemap = require("kdd.linemap")
-- config -> its assembly lines when the assembly has some, else its IR lines
local back = (asm.entries and #linemap.entries_for(asm.entries, target.line) > 0) and asm or ir
vim.cmd("KddJump")
eq(vim.api.nvim_get_current_buf(), back.buf, "jumped back to a view")
local hit = back.entries[vim.api.nvim_win_get_cursor(0)[1]]
assert(linemap.covers(linemap.range_of(hit), target.line), "the view line came from that config line")
if asm.entries then -- assembly line -> config
  local at
  for i, l in ipairs(asm.entries) do
    if l.config_range then at = i; break end
  end
  vim.api.nvim_set_current_win(vim.fn.bufwinid(asm.buf))
  vim.api.nvim_win_set_cursor(0, { at, 0 })
  vim.cmd("KddJump")
  eq(vim.api.nvim_get_current_buf(), src, "jumped from the assembly to the config")
  eq(vim.api.nvim_win_get_cursor(0)[1], asm.entries[at].config_range.start.line + 1, "config line of an assembly line")
  local config_marks = vim.api.nvim_buf_get_extmarks(src, pressure.ns, 0, -1, {})
  assert(#config_marks > 0, "config lines carry the heat of their assembly")
end
say("ok KddJump both ways")

-- inlay hints from the server (Neovim 0.10+)
vim.api.nvim_set_current_win(vim.fn.bufwinid(src))
wait("inlay hints", function() return #vim.lsp.inlay_hint.get({ bufnr = src }) > 0 end)
local hint = vim.lsp.inlay_hint.get({ bufnr = src })[1].inlay_hint
-- the register hint is the compile's (the server asks for fresh hints after it), not the pre-compile floor
local function register_hint()
  for _, h in ipairs(vim.lsp.inlay_hint.get({ bufnr = src })) do
    local label = type(h.inlay_hint.label) == "string" and h.inlay_hint.label or h.inlay_hint.label[1].value
    if label:find("regs ", 1, true) then return label end
  end
  return ""
end
wait("the compile's register hint", function() return register_hint():find("by the allocator", 1, true) ~= nil end, 30000)
assert(register_hint():find(("regs %d/"):format(regs.allocated), 1, true), register_hint())
say("ok inlay hints:", type(hint.label) == "string" and hint.label or hint.label[1].value, "|", register_hint())

-- K on the config: the server's hover in a floating window (markdown, Neovim's own parser)
vim.api.nvim_win_set_cursor(0, { (function()
  for i, l in ipairs(lines(src)) do if l:match("^iter") then return i end end
end)(), 1 })
vim.lsp.buf.hover()
local hover_win
wait("the hover window", function()
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(w).relative ~= "" then hover_win = w; return true end
  end
end)
assert(#table.concat(lines(vim.api.nvim_win_get_buf(hover_win)), "") > 0, "hover text")
vim.api.nvim_win_close(hover_win, true)
say("ok K on the config")

-- the heat colours have a 256-colour form, so they show without 'termguicolors'
vim.o.termguicolors = false
eq(vim.api.nvim_get_hl(0, { name = "KddHeat3" }).ctermfg, 166, "KddHeat3 ctermfg")
for i = 0, 4 do assert(vim.api.nvim_get_hl(0, { name = "KddHeat" .. i }).ctermfg, "ctermfg of KddHeat" .. i) end
say("ok heat without termguicolors")

-- an edit: the views follow it
local before_ir = table.concat(lines(ir.buf), "\n")
for i, l in ipairs(lines(src)) do
  if l:match('^iter = "mb16oc32ic16"') then vim.api.nvim_buf_set_lines(src, i - 1, i, false, { 'iter = "mb16oc16ic16"' }) end
end
wait("kdd/compiled after the edit", function() return kdd.state[src].compiled.version > opened end)
local edited = kdd.state[src].compiled.version
assert(kdd.state[src].compiled.registers.estimate < regs.estimate, "a smaller tile needs fewer registers")
wait("IR view refreshed", function() return view("ir").version == edited and (view("ir").pending or 0) == 0 end)
assert(table.concat(lines(ir.buf), "\n") ~= before_ir, "the IR view followed the edit")
say("ok live refresh: estimate", regs.estimate, "->", kdd.state[src].compiled.registers.estimate)

vim.cmd("KddCheck")
wait("kdd/checked", function() return kdd.state[src].checked ~= nil end)
assert(kdd.state[src].checked.result.ok, "the check passes")
assert(vim.b[src].kdd_status:match(" · check ✓$"), vim.b[src].kdd_status)
say("ok KddCheck", vim.b[src].kdd_status)

-- the next edit: compiling, the check of the older text pending, until this version's verdict
local function status_of(buf)
  return vim.api.nvim_eval_statusline("%{v:lua.require'kdd'.status()}", { winid = vim.fn.bufwinid(buf), maxwidth = 200 }).str
end
local checked_version = kdd.state[src].checked.version
for i, l in ipairs(lines(src)) do
  if l:match('^iter = ') then vim.api.nvim_buf_set_lines(src, i - 1, i, false, { 'iter = "mb16oc32ic16"' }) end
end
assert(status_of(src):match(" · check … · compiling…$"), status_of(src))
wait("the edit compiled", function() return kdd.state[src].compiled.version > checked_version end)
assert(status_of(src):match(" · check …$"), status_of(src))
say("ok check pending after an edit:", status_of(src))

-- code lenses: shown after the compile, every command advertised by the server, each one runs
wait("code lenses", function() return #vim.lsp.codelens.get(src) >= 3 end)
local client = vim.lsp.get_clients({ name = "kdd", bufnr = src })[1]
local advertised = client.server_capabilities.executeCommandProvider.commands
for _, lens in ipairs(vim.lsp.codelens.get(src)) do
  assert(vim.list_contains(advertised, lens.command.command), lens.command.command)
end
local pick -- vim.ui.select: the lens titled `pick` where a line has several
vim.ui.select = function(items, opts, choose)
  for _, item in ipairs(items) do
    if opts.format_item(item) == pick then return choose(item) end
  end
  error("no lens " .. pick)
end
local function run_lens(title)
  for _, lens in ipairs(vim.lsp.codelens.get(src)) do
    if lens.command.title == title then
      vim.api.nvim_set_current_win(vim.fn.bufwinid(src))
      vim.api.nvim_win_set_cursor(0, { lens.range.start.line + 1, 0 })
      pick = title
      vim.lsp.codelens.run()
      return
    end
  end
  error("no lens titled " .. title)
end
vim.api.nvim_win_close(vim.fn.bufwinid(view("asm").buf), true)
run_lens("Assembly")
assert(vim.fn.bufwinid(view("asm").buf) ~= -1, "the Assembly lens opened the assembly view")
vim.api.nvim_win_close(vim.fn.bufwinid(view("ir").buf), true)
run_lens("IR after pass...")
assert(vim.fn.bufwinid(view("ir").buf) ~= -1, "the IR lens opened the IR view")
local before_check = kdd.state[src].checked
run_lens("Run check")
wait("the lens's check", function() return kdd.state[src].checked ~= before_check end)
assert(status_of(src):match(" · check ✓$"), status_of(src))
say("ok lenses:", #vim.lsp.codelens.get(src), "shown, all advertised and run")

-- code actions: the quick fix of a "did you mean", applied by Neovim's own code_action
local typo_line
for i, l in ipairs(lines(src)) do
  if l:match('^fma = "dpas"') then typo_line = i; vim.api.nvim_buf_set_lines(src, i - 1, i, false, { 'fma = "dpass"' }) end
end
wait("the did-you-mean diagnostic", function()
  for _, d in ipairs(vim.diagnostic.get(src)) do if d.message:find("did you mean 'dpas'", 1, true) then return true end end
end)
vim.api.nvim_set_current_win(vim.fn.bufwinid(src))
vim.api.nvim_win_set_cursor(0, { typo_line, 8 })
vim.lsp.buf.code_action({ apply = true, filter = function(a) return a.kind == "quickfix" end })
wait("the quick fix applied", function() return lines(src)[typo_line] == 'fma = "dpas"' end, 30000)
say("ok code action:", lines(src)[typo_line])

-- kdd missing: a clear message once, a status that says so, no server started
local notes = {}
local notify = vim.notify
vim.notify = function(msg, level) notes[#notes + 1] = { msg, level } end
kdd.config.cmd = { "/nonexistent/kdd", "lsp" }
vim.cmd.edit(vim.fn.tempname() .. ".kernel.toml")
local lost = vim.api.nvim_get_current_buf()
vim.notify = notify
eq(#notes, 1, "one notification")
assert(notes[1][1]:find("no executable kdd", 1, true) and notes[1][1]:find(":help kdd-cmd", 1, true), notes[1][1])
eq(vim.b[lost].kdd_status, "kdd: not found (set cmd, :help kdd-cmd)", "status without kdd")
eq(#vim.lsp.get_clients({ bufnr = lost }), 0, "no server for it")
vim.cmd("help kdd-cmd")
assert(vim.api.nvim_get_current_line():find("*kdd-cmd*", 1, true), "the help of the cmd setting")
say("ok kdd not found:", vim.b[lost].kdd_status)
say("ALL OK")
