/*
 * MarkdownRenderer: a tiny Markdown-to-HTML renderer as a Ruby C extension, with the bug that
 * real renderer extensions have shipped (Redcarpet's, among others): the object owns two native
 * allocations, and the free function the garbage collector calls releases only the outer one.
 *
 *   renderer = MarkdownRenderer.new(escape_html: true)   # 320-byte renderer + 64-byte options
 *   renderer.render("# Title\nSome *text*")             # => "<h1>Title</h1>\n<p>Some *text*</p>\n"
 *
 * Every renderer that is garbage collected leaves its options block behind. Ruby cannot see it:
 * the blocks come from ruby_xmalloc, belong to no object, and ObjectSpace.memsize_of reports the
 * renderer struct alone.
 */
#include <ruby.h>

#include <stdbool.h>
#include <string.h>

struct render_options {
    bool escape_html;
    char reserved[511]; /* room for the options a real renderer has: link attributes, flags… */
};

struct renderer {
    struct render_options *options;
    char state[312]; /* stands in for a real renderer's callback table and buffers */
};

_Static_assert(sizeof(struct render_options) == 512, "options are one 512-byte block");
_Static_assert(sizeof(struct renderer) == 320, "a renderer is one 320-byte block");

/* noinline: the report names the function that allocated each block, and these two must stay
 * distinguishable whatever the optimization level. */
static __attribute__((noinline)) struct render_options *render_options_new(void) {
    struct render_options *options = ruby_xmalloc(sizeof *options);
    memset(options, 0, sizeof *options);
    return options;
}

static __attribute__((noinline)) struct renderer *renderer_new(void) {
    struct renderer *renderer = ruby_xmalloc(sizeof *renderer);
    memset(renderer, 0, sizeof *renderer);
    renderer->options = render_options_new();
    return renderer;
}

static void renderer_free(void *pointer) {
    struct renderer *renderer = pointer;
    /* The bug: renderer->options is never freed. */
    ruby_xfree(renderer);
}

static size_t renderer_memsize(const void *pointer) {
    (void)pointer;
    return sizeof(struct renderer);
}

static const rb_data_type_t renderer_type = {
    .wrap_struct_name = "MarkdownRenderer",
    .function = {.dfree = renderer_free, .dsize = renderer_memsize},
    .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static VALUE renderer_allocate(VALUE klass) {
    return TypedData_Wrap_Struct(klass, &renderer_type, renderer_new());
}

static struct renderer *renderer_of(VALUE self) {
    struct renderer *renderer;
    TypedData_Get_Struct(self, struct renderer, &renderer_type, renderer);
    return renderer;
}

/* MarkdownRenderer.new(escape_html: true) */
static VALUE renderer_initialize(int argc, VALUE *argv, VALUE self) {
    VALUE keywords;
    rb_scan_args(argc, argv, ":", &keywords);
    VALUE escape_html = NIL_P(keywords) ? Qnil : rb_hash_aref(keywords, ID2SYM(rb_intern("escape_html")));
    renderer_of(self)->options->escape_html = NIL_P(escape_html) || RTEST(escape_html);
    return self;
}

static void append_text(VALUE html, const char *text, long length, const struct render_options *options) {
    if (!options->escape_html) {
        rb_str_cat(html, text, length);
        return;
    }
    for (long i = 0; i < length; ++i) {
        switch (text[i]) {
            case '<': rb_str_cat_cstr(html, "&lt;"); break;
            case '>': rb_str_cat_cstr(html, "&gt;"); break;
            case '&': rb_str_cat_cstr(html, "&amp;"); break;
            default: rb_str_cat(html, &text[i], 1);
        }
    }
}

/* Renders "# " headings (levels 1 to 6) and paragraphs, one per non-empty line. */
static VALUE renderer_render(VALUE self, VALUE markdown) {
    struct renderer *renderer = renderer_of(self);
    StringValue(markdown);
    const char *text = RSTRING_PTR(markdown);
    const long length = RSTRING_LEN(markdown);
    VALUE html = rb_str_buf_new(length * 2);
    for (long start = 0; start < length;) {
        const char *newline = memchr(text + start, '\n', (size_t)(length - start));
        const long end = newline != NULL ? newline - text : length;
        int level = 0;
        while (level < 6 && start + level < end && text[start + level] == '#') ++level;
        const bool heading = level > 0 && start + level < end && text[start + level] == ' ';
        const long content = heading ? start + level + 1 : start;
        if (end > content) {
            if (heading) rb_str_catf(html, "<h%d>", level);
            else rb_str_cat_cstr(html, "<p>");
            append_text(html, text + content, end - content, renderer->options);
            if (heading) rb_str_catf(html, "</h%d>\n", level);
            else rb_str_cat_cstr(html, "</p>\n");
        }
        start = end + 1;
    }
    return html;
}

void Init_markdown_renderer(void) {
    VALUE renderer_class = rb_define_class("MarkdownRenderer", rb_cObject);
    rb_define_alloc_func(renderer_class, renderer_allocate);
    rb_define_method(renderer_class, "initialize", renderer_initialize, -1);
    rb_define_method(renderer_class, "render", renderer_render, 1);
}
