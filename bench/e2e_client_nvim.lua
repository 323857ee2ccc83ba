-- The Neovim client of bench/e2e_clients.py: the built-in LSP client (Neovim 0.7's
-- vim.lsp.start_client), a handler for lovia/event that stamps each delta on arrival.
-- Environment as for bench/e2e_client_node.mjs. Arrival stamps: vim.loop.hrtime() is libuv's
-- uv_hrtime, CLOCK_MONOTONIC on Linux (the fake model server's time.monotonic_ns()).
local ok, err = pcall(function()
  local argv = vim.fn.json_decode(os.getenv("LOVIA_BENCH_SERVER"))
  local root = os.getenv("LOVIA_BENCH_ROOT")
  local prompts = vim.fn.json_decode(os.getenv("LOVIA_BENCH_PROMPTS"))
  local clock_at_start = vim.loop.hrtime()
  local current = nil

  local function on_event(_, event, _, _)
    local arrival = vim.loop.hrtime()
    if current == nil then
      return
    end
    if event.kind == "message.delta" then
      table.insert(current.deltas, { event.text, arrival })
    elseif event.kind == "run.finished" then
      current.status = event.status
    end
  end

  local client_id = vim.lsp.start_client({
    name = "lovia-bench",
    cmd = argv,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = "ws" } },
    init_options = { lovia = vim.fn.json_decode(os.getenv("LOVIA_BENCH_INIT")) },
    settings = { lovia = vim.fn.json_decode(os.getenv("LOVIA_BENCH_SETTINGS")) },
    handlers = { ["lovia/event"] = on_event },
  })
  assert(client_id, "start_client failed")
  local client = vim.lsp.get_client_by_id(client_id)
  assert(vim.wait(30000, function() return client.initialized end, 10), "no initialize")

  local runs = {}
  for _, prompt in ipairs(prompts) do
    local run = { prompt = prompt, deltas = {}, status = "" }
    current = run
    local answered = false
    client.request("lovia/run", { prompt = prompt }, function(rerr, _)
      assert(not rerr, "lovia/run failed: " .. vim.inspect(rerr))
      answered = true
    end)
    assert(vim.wait(300000, function() return answered and run.status ~= "" end, 1), "no run.finished")
    current = nil
    table.insert(runs, run)
  end
  client.stop()
  vim.wait(10000, function() return client.is_stopped() end, 10)
  local out = io.open(os.getenv("LOVIA_BENCH_OUT"), "w")
  out:write(vim.fn.json_encode({ clockAtStart = clock_at_start, runs = runs }))
  out:close()
end)
if not ok then
  io.stderr:write("nvim client: " .. tostring(err) .. "\n")
  vim.cmd("cquit 1")
end
vim.cmd("qall!")
