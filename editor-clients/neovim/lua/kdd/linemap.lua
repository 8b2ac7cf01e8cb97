-- Line maps between a config and its views: an IR line-map entry carries origin.range, an assembly line
-- config_range (0-based lines, exclusive end), so a view line leads to config characters and a config
-- line to every view line that came from it.
local M = {}

--- Does a range cover a config line? An end at character 0 of a later line stops before that line.
function M.covers(range, line)
  if type(range) ~= "table" or type(range.start) ~= "table" then return false end
  local e = range["end"] or range.start
  local last = (e.character == 0 and e.line > range.start.line) and e.line - 1 or e.line
  return range.start.line <= line and line <= last
end

--- The config range of an IR line-map entry or an assembly line.
function M.range_of(entry)
  if type(entry) ~= "table" then return nil end
  if type(entry.config_range) == "table" then return entry.config_range end
  if type(entry.origin) == "table" and type(entry.origin.range) == "table" then return entry.origin.range end
  return nil
end

--- 1-based indices of the entries that came from a config line (0-based).
function M.entries_for(entries, line)
  local out = {}
  for i, e in ipairs(entries or {}) do
    if M.covers(M.range_of(e), line) then out[#out + 1] = i end
  end
  return out
end

return M
