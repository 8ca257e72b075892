# paratune_embed_branch(BODY NAME TEXT DELIMITER): appends to the variable BODY one branch of a
# generated `std::string f(std::string_view name)` -- `if (name == "NAME") return TEXT;` -- with TEXT
# as raw string literals R"DELIMITER(...)DELIMITER", split in pieces below the 64 KiB a compiler
# must accept per literal. Used by embed_schemas.cmake and embed_web.cmake.
function(paratune_embed_branch body_var name text delimiter)
  string(LENGTH "${text}" length)
  set(out "  if (name == \"${name}\") {\n    std::string s;\n    s.reserve(${length});\n")
  set(offset 0)
  while(offset LESS length)
    string(SUBSTRING "${text}" ${offset} 30000 piece)
    string(APPEND out "    s += R\"${delimiter}(${piece})${delimiter}\";\n")
    math(EXPR offset "${offset} + 30000")
  endwhile()
  string(APPEND out "    return s;\n  }\n")
  set(${body_var} "${${body_var}}${out}" PARENT_SCOPE)
endfunction()
