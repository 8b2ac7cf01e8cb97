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
eq(vim.b[src].kdd_status:match("^kdd xehpg · regs (%d+)/(%d+) · %d+ ms$") ~= nil, true, "status " .. vim.b[src].kdd_status)
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
  say("ok KddAsm", #asm_lines, "lines with live registers")
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
pressure.place(scratch, { { line = 1, regs = 120, live = { "c", "a" } }, { line = 2, regs = 130 } }, 128)
local placed = vim.api.nvim_buf_get_extmarks(scratch, pressure.ns, 0, -1, { details = true })
eq(#placed, 3, "marks placed: heat and count per line, live buffers where given")
eq(placed[1][4].sign_hl_group, "KddHeat3", "heat of 120/128")
eq(placed[1][4].virt_text[1][1], "120/128 regs", "virtual text")
eq(placed[2][4].virt_text[1][1], "c a", "live buffers")
eq(placed[3][4].sign_hl_group, "KddHeat4", "heat over the budget")
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
say("ok inlay hints:", type(hint.label) == "string" and hint.label or hint.label[1].value)

-- an edit: the views follow it
local before_ir = table.concat(lines(ir.buf), "\n")
for i, l in ipairs(lines(src)) do
  if l:match('^iter = "mb8oc32ic16"') then vim.api.nvim_buf_set_lines(src, i - 1, i, false, { 'iter = "mb8oc16ic16"' }) end
end
wait("kdd/compiled after the edit", function() return kdd.state[src].compiled.version > opened end)
local edited = kdd.state[src].compiled.version
assert(kdd.state[src].compiled.registers.estimate < regs.estimate, "a smaller tile needs fewer registers")
wait("IR view refreshed", function() return view("ir").version == edited and (view("ir").pending or 0) == 0 end)
assert(table.concat(lines(ir.buf), "\n") ~= before_ir, "the IR view followed the edit")
say("ok live refresh: estimate", regs.estimate, "->", kdd.state[src].compiled.registers.estimate)

vim.cmd("KddCheck")
wait("kdd/checked", function() return kdd.state[src].checked ~= nil end)
assert(kdd.state[src].checked.ok, "the check passes")
assert(vim.b[src].kdd_status:match(" · check ✓$"), vim.b[src].kdd_status)
say("ok KddCheck", vim.b[src].kdd_status)
say("ALL OK")
