-- Register pressure from kdd's assembly listing: the listing whichever way the compile object nests
-- it, heat buckets against the budget, and per config line the most live registers of its assembly.
-- The numbers are kdd's; this module only places them (same rules as server/view/static/model.js).
local M = {}

--- The listing of a kdd/assembly answer: {text, lines = {{text, live_regs, live, config_range}}, registers}.
function M.listing(result)
  if type(result) ~= "table" then return nil end
  local a = type(result.asm) == "table" and result.asm or result
  local lines = {}
  for _, l in ipairs(a.lines or {}) do
    lines[#lines + 1] = {
      text = tostring(l.text or ""),
      live_regs = type(l.live_regs) == "number" and l.live_regs or nil,
      live = type(l.live) == "table" and l.live or {},
      config_range = l.config_range ~= vim.NIL and l.config_range or nil,
    }
  end
  local text = type(a.text) == "string" and a.text or (type(a.asm) == "string" and a.asm) or nil
  if not text then
    local t = {}
    for i, l in ipairs(lines) do t[i] = l.text end
    text = table.concat(t, "\n")
  end
  return { text = text, lines = lines, registers = type(a.registers) == "table" and a.registers or {},
    target = a.target or result.target }
end

--- The labels live on each line (0-based index -> list), largest first: the registers each holds, summed
--- from the listing's allocations (ties by name); a line's own `live` labels where there are none.
function M.live_ranked(listing)
  local regs = listing.registers or {}
  local allocs = type(regs.allocations) == "table" and regs.allocations or {}
  local out = {}
  if #allocs == 0 then
    for i, l in ipairs(listing.lines) do out[i - 1] = l.live end
    return out
  end
  local sizes = {} -- line -> label -> bytes
  for _, a in ipairs(allocs) do
    for line = a.first_line, math.min(a.last_line, #listing.lines - 1) do
      sizes[line] = sizes[line] or {}
      sizes[line][a.label] = (sizes[line][a.label] or 0) + a.bytes
    end
  end
  for line, by in pairs(sizes) do
    local labels = vim.tbl_keys(by)
    table.sort(labels, function(x, y)
      if by[x] ~= by[y] then return by[x] > by[y] end
      return x < y
    end)
    out[line] = labels
  end
  return out
end

--- Heat bucket 0..4: under half the budget, under 3/4, under 90 %, within it, over it.
function M.heat(value, budget)
  if type(value) ~= "number" or type(budget) ~= "number" or budget == 0 then return 0 end
  local f = value / budget
  if f > 1 then return 4 elseif f >= 0.9 then return 3 elseif f >= 0.75 then return 2 elseif f >= 0.5 then return 1 end
  return 0
end

--- Config line (0-based) -> the most live registers of the assembly lines it produced.
function M.config_pressure(listing)
  local out = {}
  for _, l in ipairs(listing.lines) do
    local r = l.config_range
    if r and l.live_regs then
      for line = r.start.line, (r["end"] or r.start).line do
        out[line] = math.max(out[line] or 0, l.live_regs)
      end
    end
  end
  return out
end

-- Heat colours in true colour and as the nearest of the 256-colour palette, so that they show with and
-- without 'termguicolors'.
local COLORS = { { "#2f6f3f", 29 }, { "#7a8a2a", 100 }, { "#b58a1c", 136 }, { "#c4571d", 166 }, { "#d11f1f", 160 } }
M.ns = vim.api.nvim_create_namespace("kdd-pressure")

function M.define_highlights()
  for i, c in ipairs(COLORS) do
    vim.api.nvim_set_hl(0, "KddHeat" .. (i - 1), { fg = c[1], ctermfg = c[2], default = true })
  end
end

--- Marks a buffer's lines: a heat sign in the sign column and the live registers as virtual text.
--- `marks` is a list of {line (0-based), regs}. `column`: the count as a column before each line (the
--- assembly view), else at the end of the line (the config).
function M.place(buf, marks, budget, column)
  vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  local count = vim.api.nvim_buf_line_count(buf)
  for _, m in ipairs(marks) do
    if m.line < count then
      local group = "KddHeat" .. M.heat(m.regs, budget)
      local opts = { sign_text = "▌", sign_hl_group = group }
      if column then
        opts.virt_text, opts.virt_text_pos = { { ("%4d "):format(m.regs), group } }, "inline"
      else
        opts.virt_text, opts.virt_text_pos = { { m.regs .. (budget and ("/" .. budget) or "") .. " regs", group } }, "eol"
      end
      vim.api.nvim_buf_set_extmark(buf, M.ns, m.line, 0, opts)
    end
  end
end

return M
