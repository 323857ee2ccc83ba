-- Headless Neovim 0.7 with a real language server (pyright) beside lovia-server, answering the
-- server's lovia/editor/* requests through the documented recipe
-- (contrib/nvim/lovia_editor_intel.lua). The built-in coding agent runs against the fake OpenAI
-- server of the calling test. Environment: LOVIA_PY, LOVIA_ROOT, LOVIA_STATE, LOVIA_OUT,
-- LOVIA_PROMPT, LOVIA_PYRIGHT (pyright-langserver), LOVIA_RECIPE. Exits 0 after run.finished.
local ok, err = pcall(function()
  local root = os.getenv("LOVIA_ROOT")
  local intel = dofile(os.getenv("LOVIA_RECIPE"))
  intel.setup()
  local events, finished = {}, false

  local apply_edit = dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "nvim_apply_edit.lua")

  local pyright = vim.lsp.start_client({
    name = "pyright",
    cmd = { os.getenv("LOVIA_PYRIGHT"), "--stdio" },
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = "ws" } },
    settings = { python = { pythonPath = os.getenv("LOVIA_PY"), analysis = { diagnosticMode = "openFilesOnly" } } },
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
    settings = { lovia = { model = "openai:fake-model", permissions = { write = "allow" } } },
    handlers = vim.tbl_extend("force", {
      ["lovia/event"] = function(_, ev)
        table.insert(events, ev)
        if ev.kind == "run.finished" then finished = true end
      end,
      ["workspace/applyEdit"] = apply_edit,
    }, intel.handlers),
  })
  assert(pyright and lovia, "start_client failed")
  for _, id in ipairs({ pyright, lovia }) do
    local c = vim.lsp.get_client_by_id(id)
    assert(vim.wait(30000, function() return c.initialized end, 50), c.name .. " did not initialize")
  end

  -- What lspconfig does: attach the language server (and lovia) to every Python buffer.
  vim.cmd("filetype on")
  vim.api.nvim_create_autocmd("FileType", {
    pattern = "python",
    callback = function(args)
      vim.lsp.buf_attach_client(args.buf, pyright)
      vim.lsp.buf_attach_client(args.buf, lovia)
    end,
  })

  -- The user has the caller open; calc.py, which the agent edits, is not open.
  vim.cmd("edit " .. root .. "/main.py")
  local main = vim.api.nvim_get_current_buf()
  local ready = vim.wait(60000, function() return (intel.versions[main] or 0) > 0 end, 50)
  assert(ready, "pyright never checked main.py")

  local started = vim.loop.hrtime()
  vim.lsp.get_client_by_id(lovia).request("lovia/run", { prompt = os.getenv("LOVIA_PROMPT") }, function(rerr)
    if rerr then error("run failed: " .. vim.inspect(rerr)) end
  end)
  assert(vim.wait(120000, function() return finished end, 20), "run did not finish")

  local calc = vim.fn.bufnr(root .. "/calc.py")
  local f = assert(io.open(os.getenv("LOVIA_OUT"), "w"))
  f:write(vim.fn.json_encode({
    events = events,
    runSeconds = (vim.loop.hrtime() - started) / 1e9,
    calcLoaded = calc > 0 and vim.api.nvim_buf_is_loaded(calc),
    calcClients = calc > 0 and vim.tbl_map(function(c) return c.name end, vim.tbl_values(vim.lsp.buf_get_clients(calc))) or {},
  }))
  f:close()
  for _, id in ipairs({ lovia, pyright }) do
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
