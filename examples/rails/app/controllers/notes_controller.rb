# One page, rendered per request the way a notes or docs app would: Markdown to HTML with
# redcarpet, the HTML parsed with nokogiri to find the headings, and a table of contents built
# from them by the C extension TableOfContents, which leaks 384 bytes each time it is called.
class NotesController < ActionController::Base
  NOTE = <<~MARKDOWN
    # Release notes

    Rendered **per request** by redcarpet, parsed by nokogiri.

    ## Fixes

    * The table of contents is numbered again.
    * Headings keep their `<code>` spans.

    ## Known issues

    Memory grows by a few hundred bytes per request. See [leakwrap](https://example.invalid/).
  MARKDOWN

  MARKDOWN = Redcarpet::Markdown.new(Redcarpet::Render::HTML.new(with_toc_data: true), fenced_code_blocks: true)

  def show
    body = MARKDOWN.render(NOTE)
    headings = Nokogiri::HTML5.fragment(body).css('h1, h2, h3').map { |h| [h.name[1].to_i, h.text] }
    toc = TableOfContents.render(headings) # the leak: 384 native bytes per call
    render html: (toc + body).html_safe
  end
end
