/*
 * TableOfContents: the numbered table of contents of a page, from its headings, as a Ruby C
 * extension that the Rails example's controller calls once per request:
 *
 *   TableOfContents.render([[1, "Release notes"], [2, "Fixes"]])
 *   # => "<nav class=\"toc\"><ol><li>1 Release notes</li><li>1.1 Fixes</li></ol></nav>\n"
 *
 * It numbers the headings in a 384-byte state block from plain malloc and forgets to free it
 * when it returns: 384 bytes leak per call. No Ruby object owns the block, so neither the GC nor
 * ObjectSpace knows about it; the only symptom is a server whose RSS keeps growing.
 */
#include <ruby.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kLevels = 6 };

struct toc_state {
    int numbers[kLevels]; /* the current number at each heading level: 1.2.1 */
    char label[64];       /* the label of the current heading, "1.2.1" */
    char reserved[296];   /* stands in for what a real one keeps: anchors, the slug buffer… */
};

_Static_assert(sizeof(struct toc_state) == 384, "the state is one 384-byte block");

/* noinline: the report names the function that called malloc, whatever the optimization level. */
static __attribute__((noinline)) struct toc_state *toc_state_new(void) {
    struct toc_state *state = malloc(sizeof *state);
    if (state == NULL) rb_raise(rb_eNoMemError, "TableOfContents: out of memory");
    memset(state, 0, sizeof *state);
    return state;
}

/* Counts a heading of `level` (1-based) and writes its label: "2" for the second h1, "2.1" for
 * the first h2 under it. Deeper numbers restart under each new heading. */
static void number_heading(struct toc_state *state, int level) {
    state->numbers[level - 1] += 1;
    for (int deeper = level; deeper < kLevels; ++deeper) state->numbers[deeper] = 0;
    size_t used = 0;
    for (int i = 0; i < level && used < sizeof state->label; ++i)
        used += (size_t)snprintf(state->label + used, sizeof state->label - used, i == 0 ? "%d" : ".%d",
                                 state->numbers[i]);
}

static void append_escaped(VALUE html, VALUE text) {
    const char *bytes = RSTRING_PTR(text);
    for (long i = 0; i < RSTRING_LEN(text); ++i) {
        switch (bytes[i]) {
            case '<': rb_str_cat_cstr(html, "&lt;"); break;
            case '>': rb_str_cat_cstr(html, "&gt;"); break;
            case '&': rb_str_cat_cstr(html, "&amp;"); break;
            case '"': rb_str_cat_cstr(html, "&quot;"); break;
            default: rb_str_cat(html, &bytes[i], 1);
        }
    }
}

/* TableOfContents.render(headings): headings is an array of [level, text], level 1 to 6. */
static VALUE toc_render(VALUE self, VALUE headings) {
    (void)self;
    Check_Type(headings, T_ARRAY);
    /* Checked before the state exists, so that a bad argument raises without leaking. */
    for (long i = 0; i < RARRAY_LEN(headings); ++i) {
        VALUE heading = rb_ary_entry(headings, i);
        Check_Type(heading, T_ARRAY);
        const int level = NUM2INT(rb_ary_entry(heading, 0));
        if (level < 1 || level > kLevels) rb_raise(rb_eArgError, "heading level %d is not 1 to %d", level, kLevels);
        Check_Type(rb_ary_entry(heading, 1), T_STRING);
    }

    struct toc_state *state = toc_state_new();
    VALUE html = rb_str_new_cstr("<nav class=\"toc\"><ol>");
    for (long i = 0; i < RARRAY_LEN(headings); ++i) {
        VALUE heading = rb_ary_entry(headings, i);
        number_heading(state, NUM2INT(rb_ary_entry(heading, 0)));
        rb_str_catf(html, "<li>%s ", state->label);
        append_escaped(html, rb_ary_entry(heading, 1));
        rb_str_cat_cstr(html, "</li>");
    }
    rb_str_cat_cstr(html, "</ol></nav>\n");
    /* The bug: state is never freed (a free(state) belongs here). */
    return html;
}

void Init_table_of_contents(void) {
    VALUE module = rb_define_module("TableOfContents");
    rb_define_module_function(module, "render", toc_render, 1);
}
