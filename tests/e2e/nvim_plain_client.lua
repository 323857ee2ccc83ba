-- Headless Neovim 0.7 with no lovia handlers and no lovia options: the built-in client started
-- with vim.lsp.start_client (0.7 has no vim.lsp.start) and the user's own choices only. The
-- problem comes from another language server attached beside lovia
-- (problem_language_server.py); vim.lsp.buf.code_action() picks "lovia: Fix this problem";
-- the approval prompt (vim.fn.inputlist, as the default handler asks) is dismissed once, then
-- answered from "lovia: Show pending approvals". What the user saw goes to LOVIA_OUT.
-- Environment: LOVIA_PY (python), LOVIA_LS (the problems server), LOVIA_ROOT (workspace),
-- LOVIA_OUT (json file).
local ok, err = pcall(function()
  local root = os.getenv("LOVIA_ROOT")
  local seen = { menus = {}, prompts = {}, messages = {} }

  -- The user: picks a code action by its title, answers prompts, reads messages.
  local pick
  vim.ui.select = function(items, opts, on_choice)
    local titles = {}
    for _, item in ipairs(items) do
      table.insert(titles, item[2].title)
    end
    table.insert(seen.menus, titles)
    for i, item in ipairs(items) do
      if item[2].title == pick then
        return on_choice(item, i)
      end
    end
    on_choice(nil, nil)
  end
  local answers = { 0 } -- the first prompt is dismissed (Esc): no answer
  vim.fn.inputlist = function(lines)
    table.insert(seen.prompts, lines)
    local answer = table.remove(answers, 1)
    if answer ~= nil then
      return answer
    end
    for i, line in ipairs(lines) do
      if line:match("^%d+%. Accept$") then
        return i - 2 -- lines[1] is the message, lines[2] "Request Actions:"
      end
    end
    return 0
  end
  local show_message = vim.lsp.handlers["window/showMessage"]
  vim.lsp.handlers["window/showMessage"] = function(e, result, ctx, config)
    table.insert(seen.messages, result.message)
    return show_message(e, result, ctx, config)
  end

  local client_id = vim.lsp.start_client({
    name = "lovia",
    cmd = { os.getenv("LOVIA_PY"), "-m", "lovia_server" },
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = "ws" } },
    settings = { lovia = { agent = "agent.py:agent" } },
  })
  assert(client_id, "start_client failed")
  local client = vim.lsp.get_client_by_id(client_id)
  assert(vim.wait(15000, function() return client.initialized end, 50), "no initialize")

  -- The user's own language server, attached next to lovia: it reports the problem.
  local ls_id = vim.lsp.start_client({
    name = "problems",
    cmd = { os.getenv("LOVIA_PY"), os.getenv("LOVIA_LS") },
    root_dir = root,
  })
  assert(ls_id, "start_client (problems) failed")

  vim.cmd("edit " .. root .. "/app.py")
  local buf = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(buf, client_id)
  vim.lsp.buf_attach_client(buf, ls_id)
  local function problems()
    return #vim.diagnostic.get(buf)
  end
  assert(vim.wait(15000, function() return problems() == 1 end, 20), "no problem reported")
  vim.api.nvim_win_set_cursor(0, { 1, 6 })

  pick = "lovia: Fix this problem"
  vim.lsp.buf.code_action()
  assert(vim.wait(60000, function() return #seen.prompts >= 1 end, 20), "no approval prompt")
  vim.wait(500) -- dismissed: the run waits, nothing is decided
  local dismissed_text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")

  pick = "lovia: Show pending approvals"
  vim.lsp.buf.code_action()
  local function text()
    return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"
  end
  assert(vim.wait(60000, function() return text() == "x = 1\n" end, 20), "the edit did not land")
  local function shown(text)
    return function()
      for _, m in ipairs(seen.messages) do
        if m:find(text, 1, true) then
          return true
        end
      end
      return false
    end
  end
  assert(vim.wait(60000, shown("Fixed the undefined name"), 20), "no answer shown")
  assert(vim.wait(30000, shown("lovia: created"), 20), "the new file was not told")
  assert(vim.wait(15000, function() return problems() == 0 end, 20), "the problem is still there")

  local f = assert(io.open(os.getenv("LOVIA_OUT"), "w"))
  f:write(vim.fn.json_encode({
    menus = seen.menus,
    prompts = seen.prompts,
    messages = seen.messages,
    textWhileDismissed = dismissed_text,
    buffer = text(),
    modified = vim.api.nvim_buf_get_option(buf, "modified"),
    problemsAfter = problems(),
    clients = #vim.lsp.get_active_clients(),
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
