-- Headless Neovim 0.7 drives lovia-server with its built-in LSP client and default settings.
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

  local apply_edit = dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "nvim_apply_edit.lua")

  client_id = vim.lsp.start_client({
    name = "lovia",
    cmd = { os.getenv("LOVIA_PY"), "-m", "lovia_server" },
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = "ws" } },
    init_options = {
      lovia = { protocolVersion = 1, client = "nvim", approvals = "events", stateDir = os.getenv("LOVIA_STATE") },
    },
    settings = { lovia = { agent = "agent.py:agent" } },
    handlers = { ["lovia/event"] = on_event, ["workspace/applyEdit"] = apply_edit },
  })
  assert(client_id, "start_client failed")
  local client = vim.lsp.get_client_by_id(client_id)
  assert(vim.wait(15000, function() return client.initialized end, 50), "no initialize")

  -- notes.txt: open with unsaved text, so the server sees the editor's buffer.
  vim.cmd("edit " .. root .. "/notes.txt")
  local notes = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(notes, 0, -1, false, { "draft from the editor buffer" })
  vim.lsp.buf_attach_client(notes, client_id)
  -- other.txt: open and unmodified.
  vim.cmd("edit " .. root .. "/other.txt")
  local other = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(other, client_id)

  local run_result
  client.request("lovia/run", { prompt = os.getenv("LOVIA_PROMPT") }, function(rerr, result)
    if rerr then
      error("run failed: " .. vim.inspect(rerr))
    end
    run_result = result
  end)
  assert(vim.wait(30000, function() return finished end, 20), "run did not finish")

  local function buffer(bufnr)
    return {
      text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n",
      modified = vim.api.nvim_buf_get_option(bufnr, "modified"),
    }
  end
  local buffers = { notes = buffer(notes), other = buffer(other) }
  local notes_on_disk = table.concat(vim.fn.readfile(root .. "/notes.txt"), "\n") .. "\n"

  -- Restore points through workspace/executeCommand, as docs/neovim.md shows.
  local function command(name, arg)
    local answer, failure
    client.request("workspace/executeCommand", { command = name, arguments = { arg } }, function(cerr, result)
      failure, answer = cerr, result
    end)
    assert(vim.wait(30000, function() return answer ~= nil or failure ~= nil end, 20), name .. " timed out")
    assert(failure == nil, name .. " failed: " .. vim.inspect(failure))
    return answer
  end
  local listed = command("lovia.checkpoints", { sessionId = run_result.sessionId })

  -- The user saves the buffer that holds their own unsaved text plus the agent's edit.
  vim.api.nvim_buf_call(notes, function() vim.cmd("silent write") end)

  local function disk(name)
    return table.concat(vim.fn.readfile(root .. "/" .. name), "\n") .. "\n"
  end
  local before_restore = { other = disk("other.txt"), new = disk("new.txt") }
  local point = listed.checkpoints[1]
  local preview = command("lovia.restorePreview", { checkpointId = point.checkpointId })
  local restored = command("lovia.restore", { checkpointId = point.checkpointId })
  -- Unmodified buffers pick up the restored files.
  vim.o.autoread = true
  vim.cmd("checktime")
  local after = { notes = buffer(notes), other = buffer(other) }

  local f = assert(io.open(os.getenv("LOVIA_OUT"), "w"))
  f:write(vim.fn.json_encode({
    run = run_result,
    events = events,
    buffers = buffers,
    notesOnDiskBeforeSave = notes_on_disk,
    checkpoints = listed,
    preview = preview,
    restored = restored,
    buffersAfterRestore = after,
    diskBeforeRestore = before_restore,
  }))
  f:close()
  client.stop()
  vim.wait(5000, function() return client.is_stopped() end, 50)
end)
if not ok then
  io.stderr:write("nvim test failed: " .. tostring(err) .. "\n")
  vim.cmd("cquit 3")
end
vim.cmd("qall!")
