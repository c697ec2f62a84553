from evalstream._cli import main

raise SystemExit(main())
