"""What `gradcli --help` prints on a terminal of 80 columns or more (or not a terminal).

Made from the Typer app by `python -m gradcli.docs --help-module > gradcli/cli/_help.py`; a test
fails when it is out of date."""
TEXT = (
    'Usage: gradcli [OPTIONS] COMMAND [ARGS]...\n'
    '\n'
    '  A command-line gradient calculator: values, gradients and numerical\n'
    '  diagnostics of small Python-flavoured programs (TensorFlow semantics).\n'
    '\n'
    'Options:\n'
    '  --version             Print the version and exit.\n'
    '  --install-completion  Install completion for the current shell.\n'
    '  --show-completion     Show completion for the current shell, to copy it or\n'
    '                        customize the installation.\n'
    '  -h, --help            Show this message and exit.\n'
    '\n'
    'Commands:\n'
    "  eval      Evaluate a program and print the last statement's value (or...\n"
    '  grad      Gradients of the --of values (summed) with respect to each...\n'
    '  check     Compare reverse-mode gradients with float64 central finite...\n'
    '  jacobian  The full Jacobian dY/dX of one --of Y for each --wrt X,...\n'
    '  hessian   The Hessian block d²Y/dX² of a scalar Y for each --wrt X,...\n'
    "  derive    Print the gradient as a program in gradcli's own language,...\n"
    '  fix       Print the program with every fix gradcli has proven on these...\n'
    '  graph     Show the program as a graph: each operation, where it stands,...\n'
    '  plot      Draw a scalar value and its derivative (and second derivative...\n'
    '\n'
    "  Example: gradcli grad -e 'y = sum(x * x)' --wrt x --set x='[1, 2]'\n"
)
