from evalstream.cli import main

raise SystemExit(main())
