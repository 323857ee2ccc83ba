-- Headless Neovim 0.7 with a language server that counts columns in UTF-8 bytes, or in the
-- encoding LOVIA_LS_ENCODING names (encoding_language_server.py, started as nvim-lspconfig
-- starts clangd: offering `offsetEncoding` and adopting the server's choice in on_init), or the
-- real language server LOVIA_LS_CMD names (a JSON command, such as clangd), beside
-- lovia-server, answering lovia/editor/* through the documented recipe. Environment: LOVIA_PY,
-- LOVIA_ROOT, LOVIA_STATE, LOVIA_OUT, LOVIA_PROMPT, LOVIA_RECIPE, LOVIA_ENCODING_LS, and (JSON) LOVIA_OPEN (files opened in buffers
-- before the run), LOVIA_STALE ({file: text} written on disk after they were opened, as the
-- server writes a file), LOVIA_UNSAVED ({file: line} typed at the top of a buffer, unsaved).
-- Writes the run's events and each opened buffer's lines to LOVIA_OUT; exits 0 after
-- run.finished.
local ok, err = pcall(function()
  local root = os.getenv("LOVIA_ROOT")
  local intel = dofile(os.getenv("LOVIA_RECIPE"))
  intel.setup()
  local events, finished = {}, false
  vim.o.hidden = true

  local capabilities = vim.lsp.protocol.make_client_capabilities()
  capabilities.offsetEncoding = { "utf-8", "utf-32", "utf-16" }
  local ls_cmd = { os.getenv("LOVIA_PY"), os.getenv("LOVIA_ENCODING_LS") }
  if (os.getenv("LOVIA_LS_CMD") or "") ~= "" then ls_cmd = vim.fn.json_decode(os.getenv("LOVIA_LS_CMD")) end
  local ls = vim.lsp.start_client({
    name = "encoding-ls",
    cmd = ls_cmd,
    root_dir = root,
    capabilities = capabilities,
    on_init = function(client, result) -- what nvim-lspconfig's clangd set-up does
      if result.offsetEncoding then client.offset_encoding = result.offsetEncoding end
    end,
  })
  local lovia = vim.lsp.start_client({
    name = "lovia",
    cmd = { os.getenv("LOVIA_PY"), "-m", "lovia_server" },
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = "ws" } },
    init_options = {
      lovia = {
        protocolVersion = 1, client = "nvim", approvals = "events", stateDir = os.getenv("LOVIA_STATE"),
        editorIntel = { diagnostics = true, locations = true, symbols = true },
      },
    },
    settings = { lovia = { model = "openai:fake-model", diagnosticsAfterEdits = false } },
    handlers = vim.tbl_extend("force", {
      ["lovia/event"] = function(_, ev)
        table.insert(events, ev)
        if ev.kind == "run.finished" then finished = true end
      end,
    }, intel.handlers),
  })
  assert(ls and lovia, "start_client failed")
  for _, id in ipairs({ ls, lovia }) do
    local c = vim.lsp.get_client_by_id(id)
    assert(vim.wait(30000, function() return c.initialized end, 50), c.name .. " did not initialize")
  end
  local wanted = os.getenv("LOVIA_LS_ENCODING") or "utf-8"
  assert(vim.lsp.get_client_by_id(ls).offset_encoding == wanted, wanted .. " was not negotiated")

  -- What lspconfig does: attach the language server (and lovia) to every C buffer.
  vim.cmd("filetype on")
  vim.api.nvim_create_autocmd("FileType", {
    pattern = "c",
    callback = function(args)
      vim.lsp.buf_attach_client(args.buf, ls)
      vim.lsp.buf_attach_client(args.buf, lovia)
    end,
  })

  local opened = vim.fn.json_decode(os.getenv("LOVIA_OPEN") or "[]")
  for _, name in ipairs(opened) do vim.cmd("edit " .. root .. "/" .. name) end
  for name, line in pairs(vim.fn.json_decode(os.getenv("LOVIA_UNSAVED") or "{}")) do
    vim.api.nvim_buf_set_lines(vim.fn.bufnr(root .. "/" .. name), 0, 0, false, { line })
  end
  vim.wait(300, function() return false end) -- the language server opens them
  local later = os.time() + 5 -- a newer modification time than the buffers read
  for name, text in pairs(vim.fn.json_decode(os.getenv("LOVIA_STALE") or "{}")) do
    local path = root .. "/" .. name
    local f = assert(io.open(path, "w"))
    f:write(text)
    f:close()
    vim.loop.fs_utime(path, later, later)
  end

  vim.lsp.get_client_by_id(lovia).request("lovia/run", { prompt = os.getenv("LOVIA_PROMPT") }, function(rerr)
    if rerr then error("run failed: " .. vim.inspect(rerr)) end
  end)
  assert(vim.wait(120000, function() return finished end, 20), "run did not finish")

  local buffers = {}
  for _, name in ipairs(opened) do
    local bufnr = vim.fn.bufnr(root .. "/" .. name)
    buffers[name] = {
      lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false),
      modified = vim.api.nvim_buf_get_option(bufnr, "modified"),
    }
  end
  local f = assert(io.open(os.getenv("LOVIA_OUT"), "w"))
  f:write(vim.fn.json_encode({ events = events, buffers = buffers }))
  f:close()
  for _, id in ipairs({ lovia, ls }) do
    local c = vim.lsp.get_client_by_id(id)
    c.stop()
    vim.wait(5000, function() return c.is_stopped() end, 50)
  end
end)
if not ok then
  io.stderr:write("nvim test failed: " .. tostring(err) .. "\n")
  vim.cmd("cquit 3")
end
vim.cmd("qall!")
