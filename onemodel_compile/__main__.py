import sys

from onemodel_compile.cli import main

sys.exit(main())
