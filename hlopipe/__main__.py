import sys

from hlopipe.cli import main

sys.exit(main())
