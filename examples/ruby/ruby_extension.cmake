# Building Ruby C extensions with CMake, the way mkmf would: against the headers of the `ruby`
# on PATH (package ruby-dev), linked to its libruby, as a `<name>.so` that `require` loads.
#
# Sets LEAKWRAP_RUBY (the interpreter, or NOTFOUND), LEAKWRAP_RUBY_EXTENSIONS (ON when the headers
# are there too) and LEAKWRAP_RUBY_EXTENSION_DIR, and defines
# leakwrap_add_ruby_extension(<name> <source>).
find_program(LEAKWRAP_RUBY ruby HINTS /usr/bin)
# Cache variables, not plain ones, so that every directory (examples, tests) sees them.
set(LEAKWRAP_RUBY_EXTENSIONS OFF CACHE INTERNAL "")
if(LEAKWRAP_RUBY)
  execute_process(
    COMMAND ${LEAKWRAP_RUBY} -e
      "print RbConfig::CONFIG.values_at('rubyhdrdir', 'rubyarchhdrdir', 'LIBRUBYARG_SHARED').join(';')"
    OUTPUT_VARIABLE ruby_config RESULT_VARIABLE ruby_status)
  if(ruby_status EQUAL 0)
    list(GET ruby_config 0 header_dir)
    list(GET ruby_config 1 arch_header_dir)
    list(GET ruby_config 2 link_flags)
    set(LEAKWRAP_RUBY_INCLUDE_DIRS ${header_dir} ${arch_header_dir} CACHE INTERNAL "")
    separate_arguments(link_flags UNIX_COMMAND "${link_flags}")
    set(LEAKWRAP_RUBY_LINK_FLAGS ${link_flags} CACHE INTERNAL "")
    if(EXISTS ${header_dir}/ruby.h)
      set(LEAKWRAP_RUBY_EXTENSIONS ON CACHE INTERNAL "")
    endif()
  endif()
endif()
if(NOT LEAKWRAP_RUBY_EXTENSIONS)
  message(STATUS "Ruby headers not found: the Ruby extensions are not built (install ruby-dev)")
endif()

# Built like the other examples (-O0, frame pointers) so that each function of the source keeps
# its own frame and the report names the function the README points at. All extensions land in
# <build>/ruby, the one directory to put on RUBYLIB.
set(LEAKWRAP_RUBY_EXTENSION_DIR ${PROJECT_BINARY_DIR}/ruby CACHE INTERNAL "")
function(leakwrap_add_ruby_extension name source)
  add_library(${name} MODULE ${source})
  # SYSTEM: Ruby's own headers are not held to our warnings.
  target_include_directories(${name} SYSTEM PRIVATE ${LEAKWRAP_RUBY_INCLUDE_DIRS})
  target_compile_options(${name} PRIVATE -g -O0 -fno-omit-frame-pointer)
  target_link_libraries(${name} PRIVATE ${LEAKWRAP_RUBY_LINK_FLAGS} leakwrap_warnings)
  set_target_properties(${name} PROPERTIES
    PREFIX "" SUFFIX ".so" LIBRARY_OUTPUT_DIRECTORY ${LEAKWRAP_RUBY_EXTENSION_DIR})
endfunction()
