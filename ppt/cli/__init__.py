"""The `ppt` command line: one thin module per subcommand over the library."""
