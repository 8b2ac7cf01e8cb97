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
  return { text = text, lines = lines, registers = type(a.registers) == "table" and a.registers or {} }
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

local COLORS = { "#2f6f3f", "#7a8a2a", "#b58a1c", "#c4571d", "#d11f1f" }
M.ns = vim.api.nvim_create_namespace("kdd-pressure")

function M.define_highlights()
  for i, color in ipairs(COLORS) do
    vim.api.nvim_set_hl(0, "KddHeat" .. (i - 1), { fg = color, default = true })
  end
end

--- Marks a buffer's lines: a heat sign in the sign column and the live registers as virtual text.
--- `marks` is a list of {line (0-based), regs, live (labels, optional)}. `column`: the count as a column
--- before each line (the assembly view), else at the end of the line (the config).
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
      local id = vim.api.nvim_buf_set_extmark(buf, M.ns, m.line, 0, opts)
      if m.live and #m.live > 0 then -- which buffers are live, after the line
        vim.api.nvim_buf_set_extmark(buf, M.ns, m.line, 0, { id = id + 1000000,
          virt_text = { { table.concat(m.live, " "), "Comment" } }, virt_text_pos = "eol" })
      end
    end
  end
end

return M
