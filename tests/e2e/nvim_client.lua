-- Headless Neovim 0.7 drives lovia-server with its built-in LSP client.
-- Environment: LOVIA_PY (python), LOVIA_ROOT (workspace), LOVIA_STATE, LOVIA_OUT (json file),
-- LOVIA_PROMPT. Exits 0 after run.finished, non-zero on any failure.
local ok, err = pcall(function()
  local root = os.getenv("LOVIA_ROOT")
  local events = {}
  local finished = false
  local client_id

  local function on_event(_, result, _, _)
    table.insert(events, result)
    if result.kind == "approval.requested" then
      local client = vim.lsp.get_client_by_id(client_id)
      client.request("lovia/approve", {
        runId = result.runId,
        approvalId = result.approvalId,
        decision = "allow_once",
      }, function(aerr, _)
        if aerr then
          error("approve failed: " .. vim.inspect(aerr))
        end
      end)
    elseif result.kind == "run.finished" then
      finished = true
    end
  end

  client_id = vim.lsp.start_client({
    name = "lovia",
    cmd = { os.getenv("LOVIA_PY"), "-m", "lovia_server" },
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = "ws" } },
    init_options = {
      lovia = { protocolVersion = 1, client = "nvim", approvals = "events", stateDir = os.getenv("LOVIA_STATE") },
    },
    settings = { lovia = { agent = "agent.py:agent", permissions = { write = "ask" } } },
    handlers = { ["lovia/event"] = on_event },
  })
  assert(client_id, "start_client failed")
  local client = vim.lsp.get_client_by_id(client_id)
  assert(vim.wait(15000, function() return client.initialized end, 50), "no initialize")

  -- Open the target file so the server sees the editor's (unsaved) buffer text.
  vim.cmd("edit " .. root .. "/notes.txt")
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { "draft from the editor buffer" })
  vim.lsp.buf_attach_client(0, client_id)

  local run_result
  client.request("lovia/run", { prompt = os.getenv("LOVIA_PROMPT") }, function(rerr, result)
    if rerr then
      error("run failed: " .. vim.inspect(rerr))
    end
    run_result = result
  end)
  assert(vim.wait(30000, function() return finished end, 20), "run did not finish")

  local f = assert(io.open(os.getenv("LOVIA_OUT"), "w"))
  f:write(vim.fn.json_encode({ run = run_result, events = events }))
  f:close()
  client.stop()
  vim.wait(5000, function() return client.is_stopped() end, 50)
end)
if not ok then
  io.stderr:write("nvim test failed: " .. tostring(err) .. "\n")
  vim.cmd("cquit 3")
end
vim.cmd("qall!")
