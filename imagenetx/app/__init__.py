"""What the FiftyOne App side needs: the plugin installed in FiftyOne's
plugins folder (:mod:`.install`), the address the App binds
(:mod:`.address`), the folder its reports go to (:mod:`.report_folder`),
the workers that run its delegated operations (:mod:`.workers`), and
opening it on a dataset (:mod:`.launch`)."""
