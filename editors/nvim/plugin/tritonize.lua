-- Nothing starts until require("tritonize").setup({...}) is called (see editors/nvim/README.md).
if vim.fn.has("nvim-0.11") == 0 then
  vim.notify_once("tritonize needs Neovim 0.11 or newer (vim.lsp.config)", vim.log.levels.WARN)
end
