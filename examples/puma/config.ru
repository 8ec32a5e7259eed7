# A Rack app that leaks 64 native bytes per request (see README.md): each request renders its
# page with a new MarkdownRenderer, and the extension's free function forgets the renderer's
# options block. Needs the extension on the load path: RUBYLIB=<build>/ruby.
require 'markdown_renderer'

PAGE = <<~MARKDOWN
  # Release notes
  Rendered *per request* by a native extension.
MARKDOWN

run lambda { |_env|
  html = MarkdownRenderer.new(escape_html: true).render(PAGE) # one renderer per request
  [200, { 'Content-Type' => 'text/html' }, [html]]
}
