-- The workspace/applyEdit handler docs/neovim.md recommends, shared by the Neovim tests: apply
-- the agent's edit to the buffer, then save the buffers that had no unsaved changes before, so
-- disk and buffer agree. Returns the handler (it wraps Neovim's default one).
local default_apply = vim.lsp.handlers["workspace/applyEdit"]
return function(aerr, params, ctx, config)
  local clean = {}
  local edit = (params and params.edit) or {}
  local uris = vim.tbl_keys(edit.changes or {})
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument then
      table.insert(uris, change.textDocument.uri)
    end
  end
  for _, uri in ipairs(uris) do
    local bufnr = vim.uri_to_bufnr(uri)
    if vim.api.nvim_buf_is_loaded(bufnr) and not vim.api.nvim_buf_get_option(bufnr, "modified") then
      clean[bufnr] = true
    end
  end
  local result = default_apply(aerr, params, ctx, config)
  if result and result.applied then
    for bufnr in pairs(clean) do
      vim.api.nvim_buf_call(bufnr, function()
        vim.cmd("silent update")
      end)
    end
  end
  return result
end
