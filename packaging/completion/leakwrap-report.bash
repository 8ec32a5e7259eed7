# bash completion for leakwrap-report. Options, their fixed values and the subcommands are read
# from `leakwrap-report --help`, so that the completion never falls behind the program.
_leakwrap_report() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} help subcommand word
    help=$("${COMP_WORDS[0]}" --help 2>/dev/null) || return 0
    COMPREPLY=()
    # After a subcommand, its own options apply.
    for word in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
        if grep -qE "^  $word " <<<"$(sed -n '/^Subcommands:/,/^$/p' <<<"$help")"; then
            subcommand=$word
            help=$("${COMP_WORDS[0]}" "$subcommand" --help 2>/dev/null) || return 0
            break
        fi
    done

    case $prev in
        --segment | -o | --output | --out)
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            return 0 ;;
    esac
    if [[ $prev == -* ]]; then
        # The help line of an option with a value: "  --sort TEXT:{live,allocs,bytes}".
        local line values
        line=$(grep -E -- "^ +(-[a-zA-Z],)?$prev [A-Z]" <<<"$help")
        if [[ -n $line ]]; then
            values=$(sed -n 's/^[^{]*{\([^}]*\)}.*/\1/p' <<<"$line")
            mapfile -t COMPREPLY < <(compgen -W "${values//,/ }" -- "$cur")
            return 0
        fi
    fi
    if [[ $cur == -* ]]; then
        local options
        options=$(grep -oE -- '^ +(-[a-zA-Z],)?--[a-z][a-z0-9-]*' <<<"$help" | tr ',' ' ')
        mapfile -t COMPREPLY < <(compgen -W "$options" -- "$cur")
        return 0
    fi
    # A positional the help types as FILE ("series FILE"), else a pid or a subcommand.
    if sed -n '/^Positionals:/,/^$/p' <<<"$help" | grep -qE ' FILE( |$)'; then
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        return 0
    fi
    local pids subcommands
    pids=$(compgen -G '/dev/shm/leakwrap.*' | sed 's|^/dev/shm/leakwrap\.||')
    subcommands=$(sed -n '/^Subcommands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' <<<"$help")
    mapfile -t COMPREPLY < <(compgen -W "$pids $subcommands" -- "$cur")
}
complete -F _leakwrap_report leakwrap-report
