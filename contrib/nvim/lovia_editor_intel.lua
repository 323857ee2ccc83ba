-- lovia's editor intelligence for Neovim (0.7 or newer): answers the server's `lovia/editor/*`
-- requests from Neovim's diagnostics (`vim.diagnostic.get`) and from the *other* language
-- servers attached to a buffer (`client.request_sync`), so the agent sees the problems its
-- edits cause and finds definitions, references and symbols the way you do.
--
-- Use (docs/neovim.md, "The editor's eyes for the agent"):
--   local intel = dofile("/path/to/lovia/contrib/nvim/lovia_editor_intel.lua")
--   intel.setup()                                    -- counts diagnostic updates per buffer
--   vim.lsp.start_client({
--     ...,
--     init_options = { lovia = { client = "nvim", approvals = "events",
--       editorIntel = { diagnostics = true, locations = true, symbols = true } } },
--     handlers = vim.tbl_extend("force", { ... your handlers ... }, intel.handlers),
--   })
-- (An empty `editorIntel = {}` would reach the server as a JSON list: name the three.)
--
-- A file the agent edits that you do not have open is loaded into a hidden buffer and its
-- filetype detected, so the language server your set-up attaches for that filetype (lspconfig
-- does this on FileType) checks it; the agent's edits then land in that buffer (attach lovia to
-- it too, as for your other buffers) and it is saved by the applyEdit handler.
--
-- Before answering about a file, a buffer of it without unsaved changes whose file changed on
-- disk (the server wrote it) is reloaded, so language servers are asked about the file's text.
-- Positions go to each language server in the encoding it negotiated (`client.offset_encoding`:
-- UTF-8 for clangd as lspconfig starts it) and come back as the UTF-16 the server speaks. When
-- no language server attached to the file offers the request, the answer says `handled = false`.
local M = {}

M.name = "lovia" -- the lovia client's name: never asked for language features
M.max_wait_ms = 1500 -- the longest an `after` request waits for a re-check
M.first_check_ms = 400 -- how long a buffer this loaded gets for its first check
M.request_ms = 2000 -- the longest one language server may take for a location or symbol request

-- How often each buffer's diagnostics changed: the `version` the server compares.
M.versions = {}
-- The text version (LSP `version`) a language server last published diagnostics for.
M.published = {}

local function lovia_namespaces()
  local out = {}
  for _, client in ipairs(vim.lsp.get_active_clients()) do
    if client.name == M.name then out[vim.lsp.diagnostic.get_namespace(client.id)] = true end
  end
  return out
end

-- Set while a language server publishes diagnostics for an older text of the buffer (it
-- checked the text before the agent's edit): that update is not counted, so the server does
-- not take the old problems for the re-check of its edit.
local stale = false

function M.setup()
  vim.api.nvim_create_autocmd("DiagnosticChanged", {
    callback = function(args)
      if not stale then M.versions[args.buf] = (M.versions[args.buf] or 0) + 1 end
    end,
  })
  local publish = vim.lsp.handlers["textDocument/publishDiagnostics"]
  vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
    local bufnr = result and result.uri and vim.uri_to_bufnr(result.uri)
    local current = bufnr and vim.lsp.util.buf_versions[bufnr]
    stale = type(result and result.version) == "number" and type(current) == "number" and result.version < current
    if bufnr and type(result.version) == "number" then M.published[bufnr] = result.version end
    local ok, answer = pcall(publish, err, result, ctx, config)
    stale = false
    if not ok then error(answer) end
    return answer
  end
end

local function is_null(v)
  return v == nil or v == vim.NIL
end

-- Reload a loaded buffer whose file changed on disk (the server wrote it) when it has no
-- unsaved changes, without prompting: what the language servers are asked about is then the
-- file's text. A buffer with your unsaved changes is never touched.
local function refresh(bufnr)
  if not vim.api.nvim_buf_is_loaded(bufnr) or vim.api.nvim_buf_get_option(bufnr, "modified") then return end
  if vim.api.nvim_buf_get_option(bufnr, "buftype") ~= "" then return end
  local autoread = vim.api.nvim_buf_get_option(bufnr, "autoread")
  vim.api.nvim_buf_set_option(bufnr, "autoread", true) -- reload without asking
  pcall(vim.cmd, "silent checktime " .. bufnr)
  if vim.api.nvim_buf_is_valid(bufnr) then vim.api.nvim_buf_set_option(bufnr, "autoread", autoread) end
end

-- The buffer of a `file:` uri, loaded (hidden) with its filetype detected when it was not, and
-- reloaded when it was loaded but its file changed on disk since.
-- Returns the buffer and whether this loaded it.
local function ensure_loaded(uri)
  local bufnr = vim.uri_to_bufnr(uri)
  if vim.api.nvim_buf_is_loaded(bufnr) then
    refresh(bufnr)
    return bufnr, false
  end
  if vim.fn.filereadable(vim.uri_to_fname(uri)) == 0 then return bufnr, false end
  vim.fn.bufload(bufnr)
  vim.api.nvim_buf_set_option(bufnr, "buflisted", true)
  vim.api.nvim_buf_set_option(bufnr, "autoread", true) -- reloaded when the server writes it
  if vim.api.nvim_buf_get_option(bufnr, "filetype") == "" then
    vim.api.nvim_buf_call(bufnr, function() vim.cmd("filetype detect") end)
  end
  return bufnr, true
end

-- A byte column on a buffer line as LSP's UTF-16 character offset.
local function utf16(bufnr, lnum, col)
  local line = vim.api.nvim_buf_get_lines(bufnr, lnum, lnum + 1, false)[1] or ""
  col = math.max(0, math.min(col or 0, #line))
  local ok, _, u16 = pcall(vim.str_utfindex, line, col)
  return ok and u16 or col
end

local function lsp_diagnostic(bufnr, d)
  local out = {
    range = {
      start = { line = d.lnum, character = utf16(bufnr, d.lnum, d.col) },
      ["end"] = { line = d.end_lnum or d.lnum, character = utf16(bufnr, d.end_lnum or d.lnum, d.end_col or d.col) },
    },
    severity = d.severity,
    message = d.message,
    source = d.source,
  }
  local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
  if type(code) == "string" or type(code) == "number" then out.code = code end
  return out
end

local function file(bufnr, uri, skip)
  local diagnostics = {}
  if vim.api.nvim_buf_is_loaded(bufnr) then
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if not skip[d.namespace] then table.insert(diagnostics, lsp_diagnostic(bufnr, d)) end
    end
  end
  return { uri = uri, version = M.versions[bufnr] or 0, diagnostics = diagnostics }
end

-- Whether the last diagnostics published for the buffer are for its current text (a server
-- that sends no versions is taken at its word).
local function fresh(bufnr)
  local published, current = M.published[bufnr], vim.lsp.util.buf_versions[bufnr]
  return published == nil or current == nil or published >= current
end

-- Make `vim.wait` safe to call: it is refused in a fast (loop callback) context.
local function wait(ms, cond)
  if ms <= 0 or cond() or vim.in_fast_event() then return end
  vim.wait(ms, cond, 10)
end

function M.diagnostics(params)
  local skip = lovia_namespaces()
  if is_null(params.uris) then
    local files = {}
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(bufnr) then
        local f = file(bufnr, vim.uri_from_bufnr(bufnr), skip)
        if #f.diagnostics > 0 then table.insert(files, f) end
      end
    end
    return { files = files }
  end
  local bufs, loaded = {}, {}
  for i, uri in ipairs(params.uris) do
    local bufnr, new = ensure_loaded(uri)
    bufs[i] = bufnr
    if new then loaded[bufnr] = M.versions[bufnr] or 0 end
  end
  local after = is_null(params.after) and {} or params.after
  if next(after) ~= nil then
    local waits = {}
    for uri, version in pairs(after) do
      local bufnr = vim.uri_to_bufnr(uri)
      waits[bufnr] = version
      -- The server wrote a file that is loaded but not attached to lovia: reload it.
      refresh(bufnr)
    end
    -- Answer once each file's problems were re-published for its current text (an update for
    -- the text before the edit does not count), or when the wait is over.
    wait(math.min(math.max(params.waitMs or 0, 0), M.max_wait_ms), function()
      for bufnr, version in pairs(waits) do
        if (M.versions[bufnr] or 0) <= version or not fresh(bufnr) then return false end
      end
      return true
    end)
  elseif next(loaded) ~= nil then
    wait(M.first_check_ms, function()
      for bufnr, base in pairs(loaded) do
        if (M.versions[bufnr] or 0) <= base then return false end
      end
      return true
    end)
  end
  local files = {}
  for i, uri in ipairs(params.uris) do files[i] = file(bufs[i], uri, skip) end
  return { files = files }
end

-- Positions. The server speaks LSP's UTF-16 `character`s; each language server counts in the
-- encoding it negotiated (`client.offset_encoding`: clangd, as lspconfig starts it, counts UTF-8
-- bytes). A position is converted to the language server's encoding before asking, and every
-- position in its answer back to UTF-16, from the text of the line: the file's buffer, or the
-- file on disk when it has none.
local function encoding(client)
  local enc = tostring(client.offset_encoding or "utf-16"):lower():gsub("^utf%-?", "utf-")
  if enc == "utf-8" or enc == "utf-32" then return enc end
  return "utf-16"
end

-- A reader of files' lines by uri (0-based), each file read once per answer; nil when unknown.
local function line_reader()
  local cache = {}
  return function(uri, lnum)
    if cache[uri] == nil then
      local ok, fname = pcall(vim.uri_to_fname, uri)
      local entry = false
      if ok then
        for _, b in ipairs(vim.api.nvim_list_bufs()) do
          if vim.api.nvim_buf_is_loaded(b) and vim.api.nvim_buf_get_name(b) == fname then entry = { buf = b } end
        end
        if not entry and vim.fn.filereadable(fname) == 1 then
          local read, lines = pcall(vim.fn.readfile, fname)
          if read then entry = { lines = lines } end
        end
      end
      cache[uri] = entry
    end
    local entry = cache[uri]
    if not entry or type(lnum) ~= "number" then return nil end
    if entry.buf then return vim.api.nvim_buf_get_lines(entry.buf, lnum, lnum + 1, false)[1] end
    return entry.lines[lnum + 1]
  end
end

-- An index in `encoding` on `line` as a byte offset, and back.
local function byte_of(line, index, enc)
  if enc == "utf-8" then return math.max(0, math.min(index, #line)) end
  local ok, byte = pcall(vim.str_byteindex, line, index, enc == "utf-16")
  return ok and byte or #line
end

local function index_of(line, byte, enc)
  byte = math.max(0, math.min(byte, #line))
  if enc == "utf-8" then return byte end
  local ok, u32, u16 = pcall(vim.str_utfindex, line, byte)
  if not ok then return byte end
  return enc == "utf-16" and u16 or u32
end

local function position(lines, uri, pos, from, to)
  if from == to or is_null(pos) or type(pos.character) ~= "number" then return pos end
  local line = lines(uri, pos.line)
  if line == nil then return pos end
  return { line = pos.line, character = index_of(line, byte_of(line, pos.character, from), to) }
end

local function range(lines, uri, r, from, to)
  if is_null(r) or type(r) ~= "table" then return r end
  return { start = position(lines, uri, r.start, from, to), ["end"] = position(lines, uri, r["end"], from, to) }
end

-- Ask each non-lovia language server attached to `bufnr` (or every one, for a workspace
-- request) that offers `method`, with the params `params(encoding)`; each item of the answers
-- goes through `convert(item, encoding)`, and they are concatenated. Also returns whether any
-- language server offers the method (false: nothing in the editor handles this file).
local function ask(bufnr, method, params, convert)
  local clients = bufnr and vim.lsp.buf_get_clients(bufnr) or vim.lsp.get_active_clients()
  local out, handled = {}, false
  for _, client in pairs(clients) do
    if client.name ~= M.name and client.supports_method(method) then
      handled = true
      local enc = encoding(client)
      local answer = client.request_sync(method, params(enc), M.request_ms, bufnr or 0)
      local result = answer and answer.result
      if not is_null(result) then
        if result.uri or result.targetUri then result = { result } end -- a single Location
        for _, item in ipairs(result) do table.insert(out, convert(item, enc)) end
      end
    end
  end
  return out, handled
end

local function location(l)
  if l.targetUri then return { uri = l.targetUri, range = l.targetSelectionRange or l.targetRange } end
  return { uri = l.uri, range = l.range }
end

local LOCATION_METHODS = {
  definition = "textDocument/definition",
  references = "textDocument/references",
  implementation = "textDocument/implementation",
}

function M.locations(params)
  local uri = params.textDocument.uri
  local bufnr = ensure_loaded(uri)
  local lines = line_reader()
  local method = LOCATION_METHODS[params.kind]
  local locations, handled = ask(bufnr, method, function(enc)
    local request = { textDocument = params.textDocument, position = position(lines, uri, params.position, "utf-16", enc) }
    if params.kind == "references" then request.context = { includeDeclaration = true } end
    return request
  end, function(l, enc)
    local loc = location(l)
    return { uri = loc.uri, range = range(lines, loc.uri, loc.range, enc, "utf-16") }
  end)
  return { locations = locations, handled = handled }
end

-- A DocumentSymbol (with its children) or a SymbolInformation with UTF-16 positions.
local function symbol(lines, uri, s, enc)
  if type(s.location) == "table" then
    if is_null(s.location.range) then
      -- A WorkspaceSymbol may carry a location without a range: the file's start.
      s.location.range = { start = { line = 0, character = 0 }, ["end"] = { line = 0, character = 0 } }
    else
      s.location.range = range(lines, s.location.uri, s.location.range, enc, "utf-16")
    end
    return s
  end
  s.range = range(lines, uri, s.range, enc, "utf-16")
  s.selectionRange = range(lines, uri, s.selectionRange, enc, "utf-16")
  if type(s.children) == "table" then
    for i, child in ipairs(s.children) do s.children[i] = symbol(lines, uri, child, enc) end
  end
  return s
end

function M.symbols(params)
  local lines = line_reader()
  if not is_null(params.textDocument) then
    local uri = params.textDocument.uri
    local bufnr = ensure_loaded(uri)
    local symbols, handled = ask(bufnr, "textDocument/documentSymbol", function()
      return { textDocument = params.textDocument }
    end, function(s, enc) return symbol(lines, uri, s, enc) end)
    return { symbols = symbols, handled = handled }
  end
  local symbols, handled = ask(nil, "workspace/symbol", function()
    return { query = params.query or "" }
  end, function(s, enc) return symbol(lines, nil, s, enc) end)
  return { symbols = symbols, handled = handled }
end

-- Server -> client request handlers (Neovim answers with what they return; an error counts as
-- no answer on the server's side).
local function handler(fn)
  return function(_, params, _, _)
    local ok, result = pcall(fn, params or {})
    if ok then return result end
    return nil, vim.lsp.rpc_response_error(vim.lsp.protocol.ErrorCodes.InternalError, tostring(result))
  end
end

M.handlers = {
  ["lovia/editor/diagnostics"] = handler(M.diagnostics),
  ["lovia/editor/locations"] = handler(M.locations),
  ["lovia/editor/symbols"] = handler(M.symbols),
}

return M
