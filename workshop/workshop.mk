# Workshop targets (make hub, make hub-load, hub-deps): written by the workshop recipe.
hub-deps:
	@true
